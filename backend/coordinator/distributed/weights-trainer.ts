// The trainer's side of the weights: its folder on this host (the recorded one, or --weights), a
// local copy of any recorded version it needs (v0 from the database, any version from the object
// store), and each published version pushed to the object store (S3) before its record names it,
// with the store pruned as the folder is. So the trainer can run on another machine than the
// coordinator, and with S3 move machines between restarts.
import { InfrastructureError } from '../../core/errors.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type pg from 'pg';
import { logger } from '../../core/log.js';
import { DbWeightsStore } from './weights-db.js';
import {
  fetchFromStore,
  openRecordedStore,
  publishWithRetry,
  type WeightsStore,
  type WeightsStoreSpec,
} from './weights-store.js';
import { checksumDir, versionDir } from './weights.js';

const log = logger('dist-trainer');

interface Recorded {
  version: number;
  path: string;
  checksum: string;
}

export class TrainerWeights {
  /** Versions of this run by version number -> sha256 (for pruning the object store). */
  private readonly sums = new Map<number, string>();
  /** sha256 -> a folder on this host that holds it. */
  private readonly here = new Map<string, string>();

  private constructor(
    private readonly runId: string,
    /** This host's weights folder (versions go to DIR/RUN/v<N>). */
    readonly dir: string,
    /** The run's object store (S3), or null: versions are served over HTTP from here (or a shared folder). */
    readonly object: WeightsStore | null,
    private readonly db: DbWeightsStore,
  ) {}

  static async open(
    runId: string,
    getState: <T>(key: string) => Promise<T | null>,
    pool: pg.Pool,
    recorded: Recorded[],
    weightsDir?: string,
  ): Promise<TrainerWeights> {
    const object = await openRecordedStore(() => getState<WeightsStoreSpec>('dist:weights-store'));
    const dir = resolve(weightsDir ?? (await getState<string>('dist:weights')) ?? 'rft-weights');
    if (object) log.info(`run ${runId}: versions go to ${object.where}; this host keeps them in ${dir}`);
    const tw = new TrainerWeights(runId, dir, object, new DbWeightsStore(pool));
    for (const c of recorded) tw.sums.set(c.version, c.checksum);
    return tw;
  }

  /** A folder on this host with the recorded version's weights (fetched and verified when it is not here). */
  async local(c: Recorded): Promise<string> {
    this.sums.set(c.version, c.checksum);
    // The recorded folder on this host: the caller's verified load checks its sha256 (not hashed twice).
    if (existsSync(c.path)) return this.keep(c.checksum, c.path);
    const dest = versionDir(this.dir, this.runId, c.version);
    const from = this.object ?? (c.version === 0 ? this.db : null);
    if (!from && existsSync(dest) && checksumDir(dest) === c.checksum) return this.keep(c.checksum, dest);
    if (!from)
      throw new InfrastructureError(
        `run ${this.runId}: v${c.version} is at ${c.path}, which this machine does not have: run \`rft trainer\` where the previous trainer ran (its folder holds it), or give the run an object store (\`rft coordinator --weights s3://…\`), which keeps every version`,
      );
    log.info(`run ${this.runId}: fetching v${c.version} from ${from.where}`);
    return this.keep(c.checksum, await fetchFromStore(from, this.runId, c.checksum, dest));
  }

  private keep(sum: string, path: string): string {
    this.here.set(sum, path);
    return path;
  }

  /** The versions this host holds (sha256, folder): what its HTTP server can serve. */
  servable(recorded: Recorded[]): [string, string][] {
    for (const c of recorded) if (!this.here.has(c.checksum) && existsSync(c.path)) this.here.set(c.checksum, c.path);
    return [...this.here];
  }

  /** A version just saved to `dir`: to the object store, if any (before its record names it); older ones pruned there (v0 and `also` stay). */
  async publish(
    version: number,
    dir: string,
    checksum: string,
    keep: number,
    also?: Set<number>,
    /** Each failed attempt (the trainer's row shows the last error while it retries). */
    onFail?: (e: Error, attempt: number) => void,
  ): Promise<void> {
    this.sums.set(version, checksum);
    this.here.set(checksum, dir);
    if (!this.object) return;
    // A store down for a while: retried (an error line at the first failure, then every 30 s), up to 10 minutes.
    let said = 0;
    const where = this.object.where;
    await publishWithRetry(this.object, this.runId, dir, checksum, {
      onFail: (e, n) => {
        onFail?.(e, n);
        if (Date.now() - said < 30_000) return;
        said = Date.now();
        log.error(`publishing v${version} to ${where} (attempt ${n}): ${e.message}; retrying`);
      },
    });
    const stays = (v: number) => v === 0 || v > version - keep || !!also?.has(v);
    const live = new Set([...this.sums].filter(([v]) => stays(v)).map(([, s]) => s));
    for (const [v, s] of this.sums) {
      if (stays(v)) continue;
      this.sums.delete(v);
      // The same bytes may be a live version too (an unchanged model): then the objects stay.
      if (!live.has(s))
        await this.object
          .remove(this.runId, s)
          .catch((e: Error) => log.warn(`pruning v${v} from ${this.object!.where}: ${e.message}`));
    }
  }
}
