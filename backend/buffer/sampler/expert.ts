// Expert sampler: expert experiences (human-written or promoted) for SFT; reused epoch after epoch,
// least-used first so every example is seen before any is repeated. Staleness does not apply.
import type { ExperienceStore } from '../storage/types.js';
import type { Sampler, SampleBatch, SampleRequest, SamplerConfig, WaitStatus } from './types.js';
import { blockingTake, describeWait } from './wait.js';

export class ExpertSampler implements Sampler {
  readonly name = 'expert';
  constructor(
    private readonly store: ExperienceStore,
    private readonly cfg: SamplerConfig = { type: 'expert' },
    private readonly part = 'main',
  ) {}

  async sample(req: SampleRequest): Promise<SampleBatch> {
    const r = await blockingTake(
      req,
      () =>
        this.store.takeCycle({
          n: req.batchSize,
          source: 'expert',
          maxUses: this.cfg.maxUses,
          runId: this.cfg.runId,
          consumer: this.cfg.consumer,
          step: req.step,
          part: this.part,
        }),
      async () => (await this.waitStatus(req.batchSize, req.currentVersion, true))!,
    );
    return {
      experiences: r.experiences,
      expertCount: r.experiences.length,
      replayed: r.replayed,
      waitedMs: r.waitedMs,
    };
  }

  async waitStatus(n: number, _currentVersion: number, always = false): Promise<WaitStatus | null> {
    const a = await this.store.availability('cycle', {
      source: 'expert',
      maxUses: this.cfg.maxUses,
      runId: this.cfg.runId,
    });
    return a.ready >= n && !always ? null : describeWait(this.name, n, a, null);
  }
}
