// Mixed batch for MIX (SFT + GRPO): ceil(ratio x B) expert experiences first, then B minus that usual ones.
// The two parts are taken one after the other; with a consumer both are recorded under the step, so a
// retry of a step whose usual part timed out reuses its expert part instead of taking another.
import { InputError } from '../../core/errors.js';
import type { Sampler, SampleBatch, SampleRequest, WaitStatus } from './types.js';

export function expertShare(batchSize: number, ratio: number): number {
  if (!(ratio >= 0 && ratio <= 1)) throw new InputError(`mixed sampler: expertRatio must be in [0, 1], got ${ratio}`);
  // Round away float noise first: 0.3 x 10 is 3.0000000000000004, which must give 3, not 4.
  return Math.min(batchSize, Math.ceil(Number((ratio * batchSize).toFixed(9))));
}

export class MixedSampler implements Sampler {
  readonly name = 'mixed';
  constructor(
    private readonly expert: Sampler,
    private readonly usual: Sampler,
    private readonly ratio: number,
  ) {
    expertShare(1, ratio);
  }

  async sample(req: SampleRequest): Promise<SampleBatch> {
    const ne = expertShare(req.batchSize, this.ratio);
    const nu = req.batchSize - ne;
    const start = performance.now();
    const e = ne > 0 ? await this.expert.sample({ ...req, batchSize: ne }) : null;
    const u = nu > 0 ? await this.usual.sample({ ...req, batchSize: nu }) : null;
    return {
      experiences: [...(e?.experiences ?? []), ...(u?.experiences ?? [])],
      expertCount: ne,
      replayed: (e?.replayed ?? true) && (u?.replayed ?? true),
      waitedMs: performance.now() - start,
    };
  }

  async waitStatus(n: number, currentVersion: number): Promise<WaitStatus | null> {
    const ne = expertShare(n, this.ratio);
    return (
      (ne > 0 ? await this.expert.waitStatus(ne, currentVersion) : null) ??
      (n - ne > 0 ? await this.usual.waitStatus(n - ne, currentVersion) : null)
    );
  }
}
