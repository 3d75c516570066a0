// Freshest first, within the staleness bound: the batch comes from the narrowest window of recent
// versions [current - k, current] (k = 0, 1, ..., max_staleness) that holds a whole batch, oldest
// first inside it. FIFO takes the oldest allowed rows, so rows left over from a step (a re-explored
// step's surplus, an async explorer running ahead) are trained before fresher ones and keep every
// batch a version behind; this sampler trains on the newest rows there are and lets leftovers age out.
// When no narrower window has a batch it takes what FIFO would (the same wait and timeout).
import type { ExperienceStore } from '../storage/types.js';
import type { Sampler, SampleBatch, SampleRequest, SamplerConfig, WaitStatus } from './types.js';
import { blockingTake, describeWait, minVersionFor } from './wait.js';

/** Windows tried without a staleness bound before falling back to all rows. */
const UNBOUNDED_WINDOWS = 8;

export class FreshSampler implements Sampler {
  readonly name = 'fresh';
  constructor(
    private readonly store: ExperienceStore,
    private readonly cfg: SamplerConfig = { type: 'fresh' },
    private readonly part = 'main',
  ) {}

  async sample(req: SampleRequest): Promise<SampleBatch> {
    const bound = minVersionFor(req.currentVersion, this.cfg.maxStaleness);
    const take = (minVersion: number | undefined) =>
      this.store.takeFifo({
        n: req.batchSize,
        source: 'usual',
        minVersion,
        runId: this.cfg.runId,
        consumer: this.cfg.consumer,
        step: req.step,
        part: this.part,
      });
    const r = await blockingTake(
      req,
      async () => {
        const last = bound ?? req.currentVersion - UNBOUNDED_WINDOWS;
        for (let minVersion = req.currentVersion; minVersion > last; minVersion--) {
          const a = await this.store.availability('fifo', { source: 'usual', minVersion, runId: this.cfg.runId });
          if (a.ready >= req.batchSize) return await take(minVersion);
        }
        // The widest window (a recorded batch of this step comes back from any of them).
        return await take(bound);
      },
      async () =>
        describeWait(
          this.name,
          req.batchSize,
          await this.store.availability('fifo', { source: 'usual', minVersion: bound, runId: this.cfg.runId }),
          bound ?? null,
        ),
    );
    return { experiences: r.experiences, expertCount: 0, replayed: r.replayed, waitedMs: r.waitedMs };
  }

  async waitStatus(n: number, currentVersion: number): Promise<WaitStatus | null> {
    const minVersion = minVersionFor(currentVersion, this.cfg.maxStaleness);
    const a = await this.store.availability('fifo', { source: 'usual', minVersion, runId: this.cfg.runId });
    return a.ready >= n ? null : describeWait(this.name, n, a, minVersion ?? null);
  }
}
