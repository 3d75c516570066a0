// TensorBoard event files for a run's metrics (issue 44 item 3): what TRL, veRL and Trinity-RFT users
// watch, and what VS Code's Python extension opens. The format is TensorFlow's record file of `Event`
// protos (tensorboard/compat/proto/event.proto, summary.proto): each record is
//   uint64 length (LE) | uint32 masked CRC-32C of those 8 bytes | data | uint32 masked CRC-32C of data
// and the first event carries `file_version: "brain.Event:2"`. The few protobuf fields written are
// encoded here by hand (a dependency for five fields would weigh more than the code).
import { appendFileSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

// ---- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord framing uses ----
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32c(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** TFRecord's masked CRC: a CRC stored next to the data it covers would checksum badly over itself. */
export function maskedCrc32c(buf: Uint8Array): number {
  const c = crc32c(buf);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** One record of a TFRecord file. */
export function frameRecord(data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length + 4);
  out.writeBigUInt64LE(BigInt(data.length), 0);
  out.writeUInt32LE(maskedCrc32c(out.subarray(0, 8)), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}

// ---- protobuf wire format: the few shapes an Event needs ----
function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  if (v < 0n) v += 1n << 64n; // int64 two's complement, as protobuf encodes negatives
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}
const key = (field: number, wire: number) => varint((field << 3) | wire);
const bytesField = (field: number, data: Uint8Array | string): Buffer => {
  const b = typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data);
  return Buffer.concat([Buffer.from([...key(field, 2), ...varint(b.length)]), b]);
};
const varintField = (field: number, n: number | bigint) => Buffer.from([...key(field, 0), ...varint(n)]);
function doubleField(field: number, x: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(x);
  return Buffer.concat([Buffer.from(key(field, 1)), b]);
}
function floatField(field: number, x: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeFloatLE(x);
  return Buffer.concat([Buffer.from(key(field, 5)), b]);
}

// Field numbers of event.proto / summary.proto / tensor.proto.
const EVENT = { wall_time: 1, step: 2, file_version: 3, summary: 5, session_log: 7 } as const;
const VALUE = { tag: 1, simple_value: 2, tensor: 8, metadata: 9 } as const;
const DT_STRING = 7;

function event(wallTime: number, step: number, body: Buffer): Buffer {
  return Buffer.concat([doubleField(EVENT.wall_time, wallTime), varintField(EVENT.step, Math.trunc(step)), body]);
}

function scalarValue(tag: string, v: number): Buffer {
  return Buffer.concat([bytesField(VALUE.tag, tag), floatField(VALUE.simple_value, v)]);
}

/** A text summary: the text plugin's rank-0 DT_STRING tensor (markdown). */
function textValue(tag: string, text: string): Buffer {
  const metadata = bytesField(1 /* plugin_data */, bytesField(1 /* plugin_name */, 'text'));
  const tensor = Buffer.concat([
    varintField(1 /* dtype */, DT_STRING),
    bytesField(2 /* tensor_shape: rank 0 */, new Uint8Array()),
    bytesField(8 /* string_val */, text),
  ]);
  return Buffer.concat([
    bytesField(VALUE.tag, tag),
    bytesField(VALUE.metadata, metadata),
    bytesField(VALUE.tensor, tensor),
  ]);
}

/** Writes one event file (one per process: TensorBoard reads every file of a run's folder). */
export class EventFileWriter {
  readonly file: string;

  constructor(dir: string, suffix = '') {
    mkdirSync(dir, { recursive: true });
    const sec = Math.floor(Date.now() / 1000);
    const base = join(dir, `events.out.tfevents.${sec}.${hostname()}.${process.pid}${suffix ? `.${suffix}` : ''}`);
    // 'wx': a new file of this process's own; never appends to (or overwrites) another writer's. A
    // second writer of this process in the same second (a run resumed at once) takes the next number.
    let file = base;
    for (let n = 1; ; n++) {
      try {
        closeSync(openSync(file, 'wx'));
        break;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || n > 1000) throw e;
        file = `${base}.${n}`;
      }
    }
    this.file = file;
    this.append(event(Date.now() / 1000, 0, bytesField(EVENT.file_version, 'brain.Event:2')));
  }

  private append(e: Buffer): void {
    appendFileSync(this.file, frameRecord(e));
  }

  /** Scalars of one step, as one event. */
  scalars(step: number, values: [string, number][], wallTime = Date.now() / 1000): void {
    if (!values.length) return;
    const summary = Buffer.concat(values.map(([tag, v]) => bytesField(1 /* value */, scalarValue(tag, v))));
    this.append(event(wallTime, step, bytesField(EVENT.summary, summary)));
  }

  text(step: number, tag: string, text: string, wallTime = Date.now() / 1000): void {
    const summary = bytesField(1 /* value */, textValue(tag, text));
    this.append(event(wallTime, step, bytesField(EVENT.summary, summary)));
  }

  /**
   * A resumed run restarts at STEP: TensorBoard discards the earlier events at or past it (its
   * SessionLog START purge), so the curve shows the steps trained again once, not twice.
   */
  restartAt(step: number, wallTime = Date.now() / 1000): void {
    this.append(event(wallTime, step, bytesField(EVENT.session_log, varintField(1 /* status */, 1 /* START */))));
  }
}

/** Fields of a metrics record that are not series (ids, counters that are the x axis, wall clock). */
const NOT_SERIES = new Set(['t', 'step', 'kind', 'stage', 'component', 'model_version']);

/**
 * The scalars of one metrics.jsonl record: every finite number, tagged `KIND/FIELD` (train/loss,
 * explore/reward_mean, eval/accuracy, state/trainer_idle), booleans as 0/1. Nested objects and
 * strings are not series.
 */
export function recordScalars(rec: Record<string, unknown>): [string, number][] {
  const kind = typeof rec.kind === 'string' ? rec.kind : 'run';
  const out: [string, number][] = [];
  for (const [k, v] of Object.entries(rec)) {
    if (NOT_SERIES.has(k)) continue;
    if (typeof v === 'number' && Number.isFinite(v)) out.push([`${kind}/${k}`, v]);
    else if (typeof v === 'boolean') out.push([`${kind}/${k}`, v ? 1 : 0]);
  }
  return out;
}

/**
 * The run's TensorBoard folder (monitor.tensorboard): RUN_DIR/tensorboard by default, DIR/RUN_ID for a
 * folder of the user's (one subfolder per run, so `tensorboard --logdir DIR` compares runs), none for false.
 */
export function tensorboardDir(setting: boolean | string, runDir: string, runId: string): string | undefined {
  if (setting === false) return undefined;
  return setting === true ? join(runDir, 'tensorboard') : join(setting, runId);
}

/**
 * This process's event file for the run, or none (turned off, or the folder cannot be written: a
 * warning names it and the run goes on; metrics.jsonl stays the record).
 */
export function openEventFile(
  setting: boolean | string,
  runDir: string,
  runId: string,
  component: string,
  warn: (msg: string) => void,
): EventFileWriter | undefined {
  const dir = tensorboardDir(setting, runDir, runId);
  if (!dir) return undefined;
  try {
    return new EventFileWriter(dir, component);
  } catch (e) {
    warn(`monitor.tensorboard: no event file in ${dir}: ${(e as Error).message}`);
    return undefined;
  }
}
