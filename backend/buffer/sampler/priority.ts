// Priority replay: usual experiences are reused, best score first, where
// score = priority x useDecay^useCount x 0.5^(age / halfLife), and never more than maxUses times.
import { InputError } from '../../core/errors.js';
import type { ExperienceStore } from '../storage/types.js';
import type { Sampler, SampleBatch, SampleRequest, SamplerConfig, WaitStatus } from './types.js';
import { blockingTake, describeWait, minVersionFor } from './wait.js';

export class PrioritySampler implements Sampler {
  readonly name = 'priority';
  private readonly maxUses: number;
  constructor(
    private readonly store: ExperienceStore,
    private readonly cfg: SamplerConfig = { type: 'priority' },
    private readonly part = 'main',
  ) {
    this.maxUses = cfg.maxUses ?? 4;
    if (!(this.maxUses >= 1)) throw new InputError(`priority sampler: maxUses must be >= 1, got ${cfg.maxUses}`);
    const d = cfg.useDecay ?? 0.5;
    if (!(d > 0 && d <= 1)) throw new InputError(`priority sampler: useDecay must be in (0, 1], got ${d}`);
  }

  async sample(req: SampleRequest): Promise<SampleBatch> {
    const minVersion = minVersionFor(req.currentVersion, this.cfg.maxStaleness);
    const r = await blockingTake(
      req,
      () =>
        this.store.takePriority({
          n: req.batchSize,
          source: 'usual',
          minVersion,
          maxUses: this.maxUses,
          useDecay: this.cfg.useDecay ?? 0.5,
          halfLifeMs: this.cfg.halfLifeMs ?? 600_000,
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
    const a = await this.store.availability('priority', {
      source: 'usual',
      minVersion,
      maxUses: this.maxUses,
      runId: this.cfg.runId,
    });
    return a.ready >= n && !always ? null : describeWait(this.name, n, a, minVersion ?? null);
  }
}
