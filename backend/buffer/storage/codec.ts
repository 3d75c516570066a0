// Experience <-> row. Token/float arrays go into one compact binary blob (measured in bench/buffer.ts:
// about half the bytes of JSON text and faster to decode); every filterable field is its own column.
// Floats are stored as float32 when every value is exactly representable (log-probs from the tensor
// engine are), else float64: the round trip is always exact.
import { InfrastructureError } from '../../core/errors.js';
import type { Experience } from '../../core/types.js';

const FORMAT = 1;
const KIND = { absent: 0, i32: 1, u8: 2, f32: 3, f64: 4 } as const;
type Kind = (typeof KIND)[keyof typeof KIND];
const BYTES: Record<Kind, number> = { 0: 0, 1: 4, 2: 1, 3: 4, 4: 8 };

/** Typed-array views are little-endian on every platform Node ships for that we support. */
function floatKind(xs: number[]): Kind {
  for (const x of xs) if (Math.fround(x) !== x && !Number.isNaN(x)) return KIND.f64;
  return KIND.f32;
}

export function encodeArrays(e: Experience): Buffer {
  const parts: [Kind, number[] | undefined][] = [
    [KIND.i32, e.promptTokens],
    [KIND.i32, e.responseTokens],
    [KIND.u8, e.actionMask],
    [floatKind(e.logprobs), e.logprobs],
    [e.advantages ? floatKind(e.advantages) : KIND.absent, e.advantages],
    [e.returns ? floatKind(e.returns) : KIND.absent, e.returns],
  ];
  let size = 1 + parts.length * 5;
  for (const [k, xs] of parts) size += xs && k !== KIND.absent ? xs.length * BYTES[k] : 0;
  const buf = Buffer.allocUnsafe(size);
  buf.writeUInt8(FORMAT, 0);
  let off = 1 + parts.length * 5;
  parts.forEach(([k, xs], i) => {
    const n = xs && k !== KIND.absent ? xs.length : 0;
    buf.writeUInt8(k, 1 + i * 5);
    buf.writeUInt32LE(n, 2 + i * 5);
    if (!xs || k === KIND.absent) return;
    const typed =
      k === KIND.i32
        ? Int32Array.from(xs)
        : k === KIND.u8
          ? Uint8Array.from(xs)
          : k === KIND.f32
            ? Float32Array.from(xs)
            : Float64Array.from(xs);
    Buffer.from(typed.buffer, typed.byteOffset, typed.byteLength).copy(buf, off);
    off += typed.byteLength;
  });
  return buf;
}

export interface DecodedArrays {
  promptTokens: number[];
  responseTokens: number[];
  actionMask: number[];
  logprobs: number[];
  advantages?: number[];
  returns?: number[];
}

export function decodeArrays(buf: Uint8Array): DecodedArrays {
  const b = Buffer.isBuffer(buf) ? buf : Buffer.from(buf);
  if (b.length < 31 || b.readUInt8(0) !== FORMAT)
    throw new InfrastructureError(`experience arrays: unknown blob format ${b.length ? b.readUInt8(0) : 'empty'}`);
  let off = 31;
  const out: (number[] | undefined)[] = [];
  for (let i = 0; i < 6; i++) {
    const k = b.readUInt8(1 + i * 5) as Kind;
    const n = b.readUInt32LE(2 + i * 5);
    if (k === KIND.absent) {
      out.push(undefined);
      continue;
    }
    const bytes = n * BYTES[k];
    if (off + bytes > b.length) throw new InfrastructureError('experience arrays: truncated blob');
    // Copy into a fresh, aligned ArrayBuffer before viewing it as a typed array.
    const ab = new ArrayBuffer(bytes);
    b.copy(Buffer.from(ab), 0, off, off + bytes);
    off += bytes;
    const typed =
      k === KIND.i32
        ? new Int32Array(ab)
        : k === KIND.u8
          ? new Uint8Array(ab)
          : k === KIND.f32
            ? new Float32Array(ab)
            : new Float64Array(ab);
    out.push(Array.from(typed));
  }
  const r: DecodedArrays = { promptTokens: out[0]!, responseTokens: out[1]!, actionMask: out[2]!, logprobs: out[3]! };
  if (out[4]) r.advantages = out[4];
  if (out[5]) r.returns = out[5];
  return r;
}

/** The column values of one experience row (both dialects use the same names). */
export interface ExperienceRow {
  id: string;
  run_id: string;
  task_id: string;
  group_id: string;
  source: string;
  status: string;
  split: string | null;
  model_version: number;
  reward: number;
  use_count: number;
  created_at: number;
  priority: number;
  rating: number | null;
  rejected: number;
  trainable: number;
  prompt_text: string;
  response_text: string;
  arrays: Buffer;
  extra: string;
}
export const ROW_COLUMNS = [
  'id',
  'run_id',
  'task_id',
  'group_id',
  'source',
  'status',
  'split',
  'model_version',
  'reward',
  'use_count',
  'created_at',
  'priority',
  'rating',
  'rejected',
  'trainable',
  'prompt_text',
  'response_text',
  'arrays',
  'extra',
] as const;

/** Only 'ok', not rejected, not eval rows may ever be sampled for training. */
export function isTrainable(e: Pick<Experience, 'status' | 'split' | 'feedback'>): boolean {
  return e.status === 'ok' && e.split !== 'eval' && !e.feedback?.rejected;
}

export function extraJson(e: Experience): string {
  const x: Record<string, unknown> = {};
  if (e.rewardDetails !== undefined) x.rewardDetails = e.rewardDetails;
  if (e.statusReason !== undefined) x.statusReason = e.statusReason;
  if (e.feedback !== undefined) x.feedback = e.feedback;
  if (e.metadata !== undefined) x.metadata = e.metadata;
  if (e.segments !== undefined) x.segments = e.segments;
  return JSON.stringify(x);
}

export function toRow(e: Experience): ExperienceRow {
  return {
    id: e.id,
    run_id: e.runId,
    task_id: e.taskId,
    group_id: e.groupId,
    source: e.source,
    status: e.status,
    split: e.split ?? null,
    model_version: e.modelVersion,
    reward: e.reward,
    use_count: e.useCount,
    created_at: e.createdAt,
    priority: priorityOf(e),
    rating: e.feedback?.rating ?? null,
    rejected: e.feedback?.rejected ? 1 : 0,
    trainable: isTrainable(e) ? 1 : 0,
    prompt_text: e.promptText,
    response_text: e.responseText,
    arrays: encodeArrays(e),
    extra: extraJson(e),
  };
}

/** Initial replay priority: metadata.priority when the pipeline set one, else 1. */
function priorityOf(e: Experience): number {
  const p = e.metadata?.priority;
  return typeof p === 'number' && Number.isFinite(p) && p > 0 ? p : 1;
}

export function rowValues(r: ExperienceRow): unknown[] {
  return ROW_COLUMNS.map((c) => r[c]);
}

export function fromRow(row: Record<string, unknown>): Experience {
  const x = JSON.parse(String(row.extra)) as Record<string, unknown>;
  const arrays = decodeArrays(row.arrays as Buffer);
  const e: Experience = {
    id: String(row.id),
    taskId: String(row.task_id),
    groupId: String(row.group_id),
    runId: String(row.run_id),
    source: row.source as Experience['source'],
    promptTokens: arrays.promptTokens,
    promptText: String(row.prompt_text),
    responseTokens: arrays.responseTokens,
    responseText: String(row.response_text),
    actionMask: arrays.actionMask,
    logprobs: arrays.logprobs,
    modelVersion: Number(row.model_version),
    reward: Number(row.reward),
    status: row.status as Experience['status'],
    useCount: Number(row.use_count),
    createdAt: Number(row.created_at),
  };
  if (arrays.advantages) e.advantages = arrays.advantages;
  if (arrays.returns) e.returns = arrays.returns;
  if (row.split !== null && row.split !== undefined) e.split = row.split as 'train' | 'eval';
  if (x.rewardDetails !== undefined) e.rewardDetails = x.rewardDetails as Experience['rewardDetails'];
  if (x.statusReason !== undefined) e.statusReason = x.statusReason as string;
  if (x.feedback !== undefined) e.feedback = x.feedback as Experience['feedback'];
  if (x.metadata !== undefined) e.metadata = x.metadata as Experience['metadata'];
  if (x.segments !== undefined) e.segments = x.segments as Experience['segments'];
  return e;
}

/** JSON with sorted keys: equal values give equal strings (used to guard feedback undo). */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(v, (_k, val: unknown) =>
    val && typeof val === 'object' && !Array.isArray(val)
      ? Object.fromEntries(
          Object.entries(val as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : val,
  );
}
