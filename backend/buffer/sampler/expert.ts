// Expert sampler: expert experiences (human-written or promoted) for SFT and MIX's expert share;
// reused epoch after epoch, least-used first so every example is seen before any is repeated.
// Staleness does not apply. A request larger than the expert set takes it in passes (each pass
// recorded as its own part of the step, so a resumed trainer gets the same batch back): six
// demonstrations fill an expert share of 16 rows as 6 + 6 + 4, instead of waiting for rows that
// will never come.
import type { Experience } from '../../core/types.js';
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
    const experiences: Experience[] = [];
    let replayed = true;
    let waitedMs = 0;
    for (let pass = 0; experiences.length < req.batchSize; pass++) {
      const want = req.batchSize - experiences.length;
      const part = pass === 0 ? this.part : `${this.part}.${pass}`;
      const r = await blockingTake(
        req,
        async () => {
          // At most each ready row once per pass; with none ready, wait for one (not for the whole want).
          const { ready } = await this.availability();
          return this.store.takeCycle({
            n: Math.min(want, Math.max(1, ready)),
            source: 'expert',
            maxUses: this.cfg.maxUses,
            runId: this.cfg.runId,
            consumer: this.cfg.consumer,
            step: req.step,
            part,
          });
        },
        async () => (await this.waitStatus(1, req.currentVersion, true))!,
      );
      // A replayed pass recorded under another batch size gives at most what is still wanted.
      experiences.push(...r.experiences.slice(0, want));
      replayed &&= r.replayed;
      waitedMs += r.waitedMs;
    }
    return { experiences, expertCount: experiences.length, replayed, waitedMs };
  }

  private availability() {
    return this.store.availability('cycle', { source: 'expert', maxUses: this.cfg.maxUses, runId: this.cfg.runId });
  }

  /** Waits only while no expert row is ready: any one can fill a batch of any size by repeating. */
  async waitStatus(n: number, _currentVersion: number, always = false): Promise<WaitStatus | null> {
    const a = await this.availability();
    return a.ready > 0 && !always ? null : describeWait(this.name, n, a, null);
  }
}
