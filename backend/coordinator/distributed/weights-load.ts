// Where an explorer gets a published version: the recorded folder when this host sees it (the
// trainer's own host, or a shared folder) and its sha256 matches; otherwise over HTTP from the trainer
// (content-addressed, into a per-worker cache). Neither available is an error that names both.
import { existsSync, rmSync } from 'node:fs';
import { loadCheckpoint, type LoadedCheckpoint } from '../../model/checkpoint.js';
import { ChecksumError, loadVerified } from './weights.js';
import { fetchWeights, pruneCache, WeightsFetchError, type HttpWeightsSource } from './weights-http.js';

export interface PublishedVersion {
  version: number;
  path: string;
  checksum: string;
}

export class WeightsLoader {
  constructor(private readonly cacheDir: string) {}

  async load(w: PublishedVersion, http: HttpWeightsSource | null): Promise<{ ck: LoadedCheckpoint; from: 'folder' | 'http' }> {
    if (existsSync(w.path)) {
      try {
        return { ck: loadVerified(w.path, w.checksum), from: 'folder' };
      } catch (e) {
        // A half-copied share: the trainer's copy over HTTP is the one to trust, when there is one.
        if (!(e instanceof ChecksumError) || !http) throw e;
      }
    }
    if (!http)
      throw new WeightsFetchError(`${w.path}: not visible from this host, and the trainer serves no weights over HTTP (start \`rft trainer\` without --no-serve-weights, or share the folder at the same path on every machine)`);
    const dir = await fetchWeights(http, w.checksum, this.cacheDir);
    pruneCache(this.cacheDir, w.checksum);
    return { ck: loadCheckpoint(dir), from: 'http' };
  }

  dispose(): void {
    rmSync(this.cacheDir, { recursive: true, force: true });
  }
}
