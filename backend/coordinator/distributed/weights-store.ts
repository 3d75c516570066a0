// A weights store: where published versions are kept so that any machine can fetch them by sha256
// (S3-compatible object storage, or the run's database for v0). What a run uses is recorded in the
// database (run_state `dist:weights-store`, never with credentials: each process reads its own from
// the environment). Every fetch lands in a temp folder, is checked against the address and only
// then renamed into place, as over HTTP.
import { InputError } from '../../core/errors.js';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ChecksumError, checksumDir } from './weights.js';

export interface S3StoreSpec {
  kind: 's3';
  /** http(s)://host:port of an S3-compatible service; absent: AWS's own endpoint of the region. */
  endpoint?: string;
  bucket: string;
  /** Key prefix; a version's files are PREFIX/RUN/SHA256/NAME. */
  prefix: string;
  region: string;
  /** path: ENDPOINT/BUCKET/KEY; virtual: BUCKET.ENDPOINT/KEY. Absent (runs created before): path with an endpoint, else virtual. */
  addressing?: 'path' | 'virtual';
}

/** What `dist:weights-store` holds; absent: the trainer's folder (served over HTTP, or shared). */
export type WeightsStoreSpec = S3StoreSpec;

export interface WeightsStore {
  /** For messages: where the versions are (s3://bucket/prefix at endpoint, or the database). */
  readonly where: string;
  /** Store the checkpoint folder `dir` (whose sha256 is `checksum`) under that address; idempotent. */
  publish(runId: string, dir: string, checksum: string): Promise<void>;
  /** Write the files of the version with this address into the (empty) folder `into`; WeightsFetchError if it is not there. */
  download(runId: string, checksum: string, into: string): Promise<void>;
  /** Forget a pruned version (missing is fine). */
  remove(runId: string, checksum: string): Promise<void>;
}

/**
 * The version with this sha256 in the folder `dest` (kept if already there and intact), fetched from
 * the store, verified. Returns `dest`.
 */
export async function fetchFromStore(
  store: WeightsStore,
  runId: string,
  checksum: string,
  dest: string,
): Promise<string> {
  if (existsSync(dest) && checksumDir(dest) === checksum) return dest;
  mkdirSync(dirname(dest), { recursive: true });
  const tmp = `${dest}.part-${randomBytes(4).toString('hex')}`;
  mkdirSync(tmp);
  try {
    await store.download(runId, checksum, tmp);
    const got = checksumDir(tmp);
    if (got !== checksum)
      throw new ChecksumError(
        `${store.where}: downloaded sha256 ${got.slice(0, 12)}… is not the address ${checksum.slice(0, 12)}…`,
      );
    rmSync(dest, { recursive: true, force: true });
    renameSync(tmp, dest);
    return dest;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The run's recorded store (null: none, the trainer's folder / HTTP); S3 credentials from this process's own chain (env, profile, role). */
export async function openRecordedStore(get: () => Promise<WeightsStoreSpec | null>): Promise<WeightsStore | null> {
  const spec = await get();
  if (!spec) return null;
  if (spec.kind !== 's3')
    throw new InputError(
      `dist:weights-store: unknown kind '${(spec as { kind: string }).kind}' (this version knows s3)`,
    );
  const { S3WeightsStore } = await import('./weights-s3.js');
  const store = new S3WeightsStore(spec);
  await store.checkCredentials();
  return store;
}

/**
 * Publish, retrying while the store fails (an object store down for a while must not end the run):
 * `onFail` hears each failure (the caller logs it), every `everyMs`; after `maxMs` the last error is thrown.
 */
export async function publishWithRetry(
  store: WeightsStore,
  runId: string,
  dir: string,
  checksum: string,
  o: { everyMs?: number; maxMs?: number; onFail?: (e: Error, attempt: number) => void } = {},
): Promise<number> {
  const t0 = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      await store.publish(runId, dir, checksum);
      return attempt;
    } catch (e) {
      o.onFail?.(e as Error, attempt);
      if (Date.now() - t0 >= (o.maxMs ?? 600_000)) throw e;
      await new Promise((r) => setTimeout(r, o.everyMs ?? 2000));
    }
  }
}
