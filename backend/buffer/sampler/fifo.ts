// FIFO with a staleness bound: each usual experience is trained on once, oldest first, and only if
// its model version >= current - maxStaleness (older ones are counted and skipped, never deleted).
import type { ExperienceStore } from '../storage/types.js';
import type { Sampler, SampleBatch, SampleRequest, SamplerConfig, WaitStatus } from './types.js';
import { blockingTake, describeWait, minVersionFor } from './wait.js';

export class FifoSampler implements Sampler {
  readonly name = 'fifo';
  constructor(
    private readonly store: ExperienceStore,
    private readonly cfg: SamplerConfig = { type: 'fifo' },
    private readonly part = 'main',
  ) {}

  async sample(req: SampleRequest): Promise<SampleBatch> {
    const minVersion = minVersionFor(req.currentVersion, this.cfg.maxStaleness);
    const r = await blockingTake(
      req,
      () =>
        this.store.takeFifo({
          n: req.batchSize,
          source: 'usual',
          minVersion,
          runId: this.cfg.runId,
          consumer: this.cfg.consumer,
          step: req.step,
          part: this.part,
        }),
      async () => (await this.waitStatus(req.batchSize, req.currentVersion, true))!,
    );
    return { experiences: r.experiences, expertCount: 0, replayed: r.replayed, waitedMs: r.waitedMs };
  }

  async waitStatus(n: number, currentVersion: number, always = false): Promise<WaitStatus | null> {
    const minVersion = minVersionFor(currentVersion, this.cfg.maxStaleness);
    const a = await this.store.availability('fifo', { source: 'usual', minVersion, runId: this.cfg.runId });
    return a.ready >= n && !always ? null : describeWait(this.name, n, a, minVersion ?? null);
  }
}
