// Where an explorer gets a published version: the recorded folder when this host sees it (the
// trainer's own host, or a shared folder) and its sha256 matches; otherwise from the run's object
// store when it has one (S3), else over HTTP(S) from the trainer (content-addressed, into a per-worker
// cache). None available is an error that names them.
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadCheckpoint, type LoadedCheckpoint } from '../../model/checkpoint.js';
import { inferenceOutsideHeap } from '../../model/external-weights.js';
import { ChecksumError, loadVerified } from './weights.js';
import { fetchWeights, pruneCache, WeightsFetchError, type ClientTls, type HttpWeightsSource } from './weights-http.js';
import { fetchFromStore, type WeightsStore } from './weights-store.js';

export interface PublishedVersion {
  version: number;
  path: string;
  checksum: string;
}

export class WeightsLoader {
  constructor(
    private readonly cacheDir: string,
    private readonly o: { runId?: string; store?: WeightsStore | null; tls?: ClientTls } = {},
  ) {}

  async load(
    w: PublishedVersion,
    http: HttpWeightsSource | null,
  ): Promise<{ ck: LoadedCheckpoint; from: 'folder' | 'http' | 's3' }> {
    const store = this.o.store;
    // An explorer only samples: the weights load outside the wasm heap when the addon allows.
    const external = inferenceOutsideHeap();
    if (existsSync(w.path)) {
      try {
        return { ck: loadVerified(w.path, w.checksum, { external }), from: 'folder' };
      } catch (e) {
        // A half-copied share: the trainer's copy (store or HTTP) is the one to trust, when there is one.
        if (!(e instanceof ChecksumError) || (!http && !store)) throw e;
      }
    }
    if (store) {
      const dir = await fetchFromStore(store, this.o.runId ?? '', w.checksum, join(this.cacheDir, w.checksum));
      pruneCache(this.cacheDir, w.checksum);
      return { ck: loadCheckpoint(dir, { external }), from: 's3' };
    }
    if (!http)
      throw new WeightsFetchError(
        `${w.path}: not visible from this host, and the trainer serves no weights over HTTP (start \`rft trainer\` without --no-serve-weights, or share the folder at the same path on every machine)`,
      );
    const dir = await fetchWeights(http, w.checksum, this.cacheDir, 5000, this.o.tls);
    pruneCache(this.cacheDir, w.checksum);
    return { ck: loadCheckpoint(dir, { external }), from: 'http' };
  }

  dispose(): void {
    rmSync(this.cacheDir, { recursive: true, force: true });
  }
}
