// rft.json of a checkpoint: validated field by field (in the file's own names), and the sha256 of
// its weights, written at save and checked at load, so damaged or altered weights (finite garbage
// passes every other check) are refused before they are evaluated or trained on.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../core/errors.js';
import type { CheckpointMeta } from './checkpoint.js';
import { ADAPTER_WEIGHTS_FILE } from './lora-files.js';
import { openRegularFile, readRegularFile } from '../core/regular-file.js';

export const META_FILE = 'rft.json';
/** The files the digests cover: the (base) weights, and a LoRA checkpoint's adapter weights. */
export const DIGEST_FILE = 'model.safetensors';
const DIGESTS = { weights_sha256: DIGEST_FILE, adapter_sha256: ADAPTER_WEIGHTS_FILE } as const;

const isCount = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** Reads and checks `<dir>/rft.json`; a folder without one (an imported HF model) is version 0. */
export function readCheckpointMeta(dir: string): CheckpointMeta {
  const file = join(dir, META_FILE);
  if (!existsSync(file)) return { version: 0 };
  let raw: unknown;
  try {
    raw = JSON.parse(readRegularFile(file, 'utf8'));
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`not valid JSON (${(e as Error).message})`, { file });
  }
  const fail = (field: string, message: string): never => {
    throw new InputError(message, { file, field });
  };
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return fail('(root)', 'expected a JSON object');
  const m = raw as Record<string, unknown>;
  if (!isCount(m.version)) fail('version', `expected a whole number >= 0, got ${JSON.stringify(m.version)}`);
  for (const k of ['step', 'stage_index', 'stage_step'])
    if (m[k] !== undefined && !isCount(m[k])) fail(k, `expected a whole number >= 0, got ${JSON.stringify(m[k])}`);
  if (m.createdAt !== undefined && !(typeof m.createdAt === 'number' && Number.isFinite(m.createdAt)))
    fail('createdAt', `expected a time in ms, got ${JSON.stringify(m.createdAt)}`);
  if (m.stage !== undefined && typeof m.stage !== 'string')
    fail('stage', `expected a stage name, got ${JSON.stringify(m.stage)}`);
  if (
    m.base_accuracy !== undefined &&
    m.base_accuracy !== null &&
    !(typeof m.base_accuracy === 'number' && m.base_accuracy >= 0 && m.base_accuracy <= 1)
  )
    fail('base_accuracy', `expected an accuracy from 0 to 1, got ${JSON.stringify(m.base_accuracy)}`);
  // `trainer.lr: auto`'s state: the lr it had reached, continued by a resumed stage.
  if (m.lr_auto !== undefined) {
    const lr = (m.lr_auto as { lr?: unknown } | null)?.lr;
    if (!(typeof lr === 'number' && Number.isFinite(lr) && lr > 0))
      fail('lr_auto.lr', `expected a positive learning rate, got ${JSON.stringify(lr)}`);
  }
  for (const k of Object.keys(DIGESTS))
    if (m[k] !== undefined && !(typeof m[k] === 'string' && /^[0-9a-f]{64}$/.test(m[k] as string)))
      fail(k, `expected 64 hex digits, got ${JSON.stringify(m[k])}`);
  return m as CheckpointMeta;
}

/** sha256 of a file, read in chunks (never whole in memory). */
export function sha256File(file: string): string {
  const h = createHash('sha256');
  const buf = Buffer.allocUnsafe(1 << 20);
  const fd = openRegularFile(file);
  try {
    for (let n; (n = readSync(fd, buf, 0, buf.length, null)) > 0; ) h.update(buf.subarray(0, n));
  } finally {
    closeSync(fd);
  }
  return h.digest('hex');
}

export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** Each file whose sha256 rft.json records (weights_sha256, adapter_sha256) must still have it. */
export function verifyWeights(dir: string, meta: CheckpointMeta): void {
  for (const [key, name] of Object.entries(DIGESTS)) {
    const want = (meta as Record<string, unknown>)[key];
    if (typeof want !== 'string') continue;
    const file = join(dir, name);
    if (!existsSync(file)) throw new InputError(`missing, and ${META_FILE} records its sha256`, { file });
    const got = sha256File(file);
    if (got !== want)
      throw new InputError(
        `sha256 ${got} does not match ${key} ${want} in ${META_FILE}: the weights were changed or damaged after they were saved`,
        { file },
      );
  }
}

/** A checkpoint's stage_index against the run's stages: stages.length means all done, more is a bad file. */
export function checkStageIndex(meta: CheckpointMeta, stages: number, dir: string): number {
  const si = meta.stage_index === undefined ? 0 : (meta.stage_index as number);
  if (!isCount(si) || si > stages)
    throw new InputError(
      `${JSON.stringify(meta.stage_index)} is not a stage of this run (it has ${stages}; ${stages} means all done)`,
      { file: join(dir, META_FILE), field: 'stage_index' },
    );
  return si;
}
