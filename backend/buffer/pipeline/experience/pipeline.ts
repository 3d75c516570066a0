// Runs the configured experience operators: raw rollouts in, verified experiences and counts out.
// Infra failures bypass the operators untouched (status, reward) and come out excluded from training.
import type { Experience } from '../../../core/types.js';
import { buildSteps, type BuiltStep } from '../task/operator-spec.js';
import { experienceOperators } from './registry.js';
import type {
  DroppedExperience,
  ExperienceOperator,
  ExperiencePipelineDeps,
  ExperiencePipelineResult,
} from './types.js';

/** The usual chain: validity, drop invalid, then advantages. */
export const DEFAULT_EXPERIENCE_PIPELINE = [{ name: 'validity' }, { name: 'reward_filter' }, { name: 'advantage' }];

export class ExperiencePipeline {
  private constructor(private readonly steps: BuiltStep<ExperienceOperator>[]) {}

  static fromConfig(
    config: unknown,
    deps: ExperiencePipelineDeps = {},
    path = 'experience_pipeline',
  ): ExperiencePipeline {
    return new ExperiencePipeline(buildSteps(experienceOperators, config, deps, path));
  }

  get names(): string[] {
    return this.steps.map((s) => s.name);
  }

  run(raw: Experience[]): ExperiencePipelineResult {
    const counts: Record<string, number> = { in: raw.length };
    const bump = (k: string, n = 1) => (counts[k] = (counts[k] ?? 0) + n);
    const dropped: DroppedExperience[] = [];
    const infra: Experience[] = [];
    // Copies, so operators may set fields without touching the caller's objects.
    let cur: Experience[] = [];
    for (const e of raw) (e.status === 'infra_failure' ? infra : cur).push({ ...e });
    const ctx = {
      drop: (e: Experience, reason: string) => {
        dropped.push({ experience: e, reason });
        bump(`dropped:${reason}`);
      },
      count: bump,
    };
    for (const s of this.steps) cur = s.op.apply(cur, ctx);
    const trainable = cur.filter((e) => e.status === 'ok');
    const excluded = [...cur.filter((e) => e.status !== 'ok'), ...infra].map((e) => ({
      ...e,
      metadata: { ...e.metadata, excludedFromTraining: true },
    }));
    if (infra.length) counts.infra_failure = infra.length;
    counts.trainable = trainable.length;
    counts.excluded = excluded.length;
    return { experiences: [...trainable, ...excluded], trainable, excluded, dropped, counts };
  }
}
