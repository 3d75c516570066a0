// Versioned weights in a shared folder: the trainer writes checkpoint v<N> (atomically: the
// checkpoint writer renames a finished temp folder), records it with its sha256 in the buffer and
// NOTIFYs; an explorer verifies the checksum before loading, so a half-copied or damaged folder on a
// network share is never used.
import { InfrastructureError } from '../../core/errors.js';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadCheckpoint, type LoadedCheckpoint } from '../../model/checkpoint.js';
import { checkRunId } from '../../core/run-id.js';

/** sha256 over the folder's files (sorted names, each name then its bytes). */
export function checksumDir(dir: string): string {
  const h = createHash('sha256');
  for (const name of readdirSync(dir).sort()) {
    const f = join(dir, name);
    if (!statSync(f).isFile()) continue;
    h.update(name + '\0');
    h.update(readFileSync(f));
  }
  return h.digest('hex');
}

export function versionDir(weightsDir: string, runId: string, version: number): string {
  return join(weightsDir, checkRunId(runId), `v${version}`);
}

export class ChecksumError extends InfrastructureError {}

/** Load a published checkpoint after checking its folder against the recorded checksum (`external`: as loadCheckpoint's). */
export function loadVerified(path: string, checksum: string, opts: { external?: boolean } = {}): LoadedCheckpoint {
  if (!existsSync(path)) throw new ChecksumError(`${path}: not visible from this host (is the weights folder shared?)`);
  const got = checksumDir(path);
  if (checksum && got !== checksum)
    throw new ChecksumError(
      `${path}: sha256 ${got.slice(0, 12)}… does not match the recorded ${checksum.slice(0, 12)}…`,
    );
  return loadCheckpoint(path, opts);
}

/** Remove published versions older than the newest `keep` (v0, the run's start, and `also` stay). */
export function pruneVersions(
  weightsDir: string,
  runId: string,
  newest: number,
  keep: number,
  also?: Set<number>,
): void {
  const dir = join(weightsDir, runId);
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) {
    const m = /^v(\d+)$/.exec(name);
    if (!m) continue;
    const v = Number(m[1]);
    if (v === 0 || v > newest - keep || also?.has(v)) continue;
    rmSync(join(dir, name), { recursive: true, force: true });
  }
}
