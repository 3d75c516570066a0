// Host side of the worker protocol: parse a worker's line defensively (a worker may be hostile if
// the code escaped the vm), decode the tagged value encoding, and compare results with expected
// values. Decoded objects have a null prototype and are built with defineProperty, so a returned
// `{"__proto__": ...}` is just a key, never a prototype change.
import type { CallResult, RunKind } from './types.js';

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/** Marker for values JSON cannot hold (undefined, NaN, functions, ...). */
export class Special {
  constructor(
    readonly tag: string,
    readonly v?: string,
  ) {}
  toString(): string {
    return this.v === undefined ? this.tag : `${this.tag}(${this.v})`;
  }
}

export class ProtocolError extends Error {}

function isRecord(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Decodes one value of the worker's tagged encoding. */
export function decodeValue(x: unknown, depth = 0): unknown {
  if (depth > 80) throw new ProtocolError('value nested too deeply');
  if (x === null || typeof x === 'number' || typeof x === 'string' || typeof x === 'boolean') return x;
  if (Array.isArray(x)) return x.map((e) => decodeValue(e, depth + 1));
  if (!isRecord(x)) throw new ProtocolError('bad value');
  if (hasOwn(x, '$o')) {
    const src = x.$o;
    if (!isRecord(src)) throw new ProtocolError('bad object value');
    const out = Object.create(null) as Record<string, unknown>;
    for (const k of Object.keys(src)) {
      Object.defineProperty(out, k, {
        value: decodeValue(src[k], depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  if (typeof x.$ === 'string') {
    if (x.$ === 'undefined') return undefined;
    if (x.$ === 'NaN') return NaN;
    if (x.$ === 'Infinity') return Infinity;
    if (x.$ === '-Infinity') return -Infinity;
    return new Special(x.$.slice(0, 40), typeof x.v === 'string' ? x.v.slice(0, 400) : undefined);
  }
  throw new ProtocolError('unknown value tag');
}

function decodeCall(x: unknown): CallResult {
  if (!isRecord(x)) throw new ProtocolError('bad call result');
  if (x.ok === true) return { ok: true, value: decodeValue(x.value) };
  const kinds = ['threw', 'timeout', 'output_limit', 'missing', 'pending'] as const;
  const kind = kinds.find((k) => k === x.kind);
  if (!kind) throw new ProtocolError('bad call result kind');
  return { ok: false, kind, error: typeof x.error === 'string' ? x.error.slice(0, 500) : '' };
}

const RUN_KINDS: RunKind[] = ['ok', 'syntax_error', 'load_error', 'timeout', 'memory', 'output_limit', 'crash'];

export interface DoneMessage {
  kind: RunKind;
  error: string;
  calls: CallResult[];
  value: CallResult | null;
  logs: string;
  logsTruncated: boolean;
}

export type WorkerMessage =
  | { t: 'ready' }
  | { t: 'start'; id: number }
  | ({ t: 'done'; id: number } & DoneMessage)
  | { t: 'error'; error: string };

/** Parses and validates one protocol line; throws ProtocolError on anything unexpected. */
export function parseWorkerLine(line: string): WorkerMessage {
  let x: unknown;
  try {
    x = JSON.parse(line);
  } catch {
    throw new ProtocolError('worker sent a line that is not JSON');
  }
  if (!isRecord(x)) throw new ProtocolError('worker sent a non-object');
  if (x.t === 'ready') return { t: 'ready' };
  if (x.t === 'error') return { t: 'error', error: String(x.error).slice(0, 200) };
  if (typeof x.id !== 'number' || !Number.isSafeInteger(x.id)) throw new ProtocolError('worker message without id');
  if (x.t === 'start') return { t: 'start', id: x.id };
  if (x.t !== 'done') throw new ProtocolError('unknown worker message');
  const kind = RUN_KINDS.find((k) => k === x.kind);
  if (!kind || !Array.isArray(x.calls) || !Array.isArray(x.logs)) throw new ProtocolError('malformed done message');
  return {
    t: 'done',
    id: x.id,
    kind,
    error: typeof x.error === 'string' ? x.error.slice(0, 500) : '',
    calls: x.calls.map(decodeCall),
    value: x.value === null ? null : decodeCall(x.value),
    logs: typeof x.logs[0] === 'string' ? x.logs[0] : '',
    logsTruncated: x.logs[1] === true,
  };
}

/**
 * Deep equality of a decoded result with an expected (JSON) value. Numbers: exact for integers,
 * relative tolerance 1e-9 otherwise (float rounding in the user's arithmetic is not a wrong answer).
 * Objects compare by own enumerable keys, ignoring prototypes.
 */
export function deepEqualResult(actual: unknown, expected: unknown, depth = 0): boolean {
  if (depth > 100) return false;
  if (typeof expected === 'number' && typeof actual === 'number') {
    if (Number.isNaN(expected)) return Number.isNaN(actual);
    if (actual === expected) return true;
    if (Number.isInteger(expected) || !Number.isFinite(expected)) return false;
    return Math.abs(actual - expected) <= 1e-9 * Math.max(1, Math.abs(expected));
  }
  if (actual instanceof Special || expected === null || typeof expected !== 'object') return actual === expected;
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((e, i) => deepEqualResult(actual[i], e, depth + 1))
    );
  }
  if (typeof actual !== 'object' || actual === null || Array.isArray(actual)) return false;
  const ek = Object.keys(expected);
  const ak = Object.keys(actual);
  if (ek.length !== ak.length) return false;
  const a = actual as Record<string, unknown>;
  const e = expected as Record<string, unknown>;
  return ek.every((k) => hasOwn(a, k) && deepEqualResult(a[k], e[k], depth + 1));
}
