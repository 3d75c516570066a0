// Samplers by name ('fifo', 'fresh', 'priority', 'expert', 'pairs', 'mixed'); a new sampler is one file plus one entry in the map below.
import { InputError } from '../../core/errors.js';
import { Registry } from '../../core/registry.js';
import type { ExperienceStore } from '../storage/types.js';
import { ExpertSampler } from './expert.js';
import { FifoSampler } from './fifo.js';
import { FreshSampler } from './fresh.js';
import { MixedSampler } from './mixed.js';
import { PairSampler } from './pairs.js';
import { PrioritySampler } from './priority.js';
import type { Sampler, SamplerConfig, SamplerFactory } from './types.js';

export const samplers: Registry<SamplerFactory> = new Registry<SamplerFactory>('sampler', {
  fifo: (store, cfg) => new FifoSampler(store, cfg),
  fresh: (store, cfg) => new FreshSampler(store, cfg),
  priority: (store, cfg) => new PrioritySampler(store, cfg),
  expert: (store, cfg) => new ExpertSampler(store, cfg),
  pairs: (store, cfg) => new PairSampler(store, cfg),
  mixed: (store, cfg) => {
    const usualName = cfg.usual ?? 'fifo';
    if (usualName === 'mixed' || usualName === 'expert' || usualName === 'pairs')
      throw new InputError(`mixed sampler: usual part must read usual experiences, got '${usualName}'`);
    // Parts are recorded separately under the same step.
    const usual =
      usualName === 'priority'
        ? new PrioritySampler(store, cfg, 'usual')
        : usualName === 'fifo'
          ? new FifoSampler(store, cfg, 'usual')
          : usualName === 'fresh'
            ? new FreshSampler(store, cfg, 'usual')
            : samplers.get(usualName)(store, cfg);
    // maxUses belongs to the usual part (priority); the expert part has its own limit.
    return new MixedSampler(
      new ExpertSampler(store, { ...cfg, maxUses: cfg.expertMaxUses }, 'expert'),
      usual,
      cfg.expertRatio ?? 0.5,
    );
  },
});

export function makeSampler(store: ExperienceStore, cfg: SamplerConfig): Sampler {
  return samplers.get(cfg.type)(store, cfg);
}
