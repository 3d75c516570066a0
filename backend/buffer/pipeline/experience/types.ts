// Experience pipeline (raw -> verified): validity checks, reward filters, reward shaping, advantages.
// Infra failures skip every operator: they keep their status and reward and are never trained on.
import type { Experience } from '../../../core/types.js';

export interface ExperienceOpContext {
  /** Remove an experience from the output, counted under `dropped:<reason>`. */
  drop(e: Experience, reason: string): void;
  /** Count an event under `reason` (shown as pipeline metrics). */
  count(reason: string, n?: number): void;
}

export interface ExperienceOperator {
  /** Gets the non-infra-failure experiences; returns those that go on (others via ctx.drop). */
  apply(exps: Experience[], ctx: ExperienceOpContext): Experience[];
}

export interface ExperiencePipelineDeps {
  /**
   * Sets `advantages` (and optionally `returns`) of the experiences in place, e.g. the trainer's GRPO
   * group advantage. Injected by the caller: the buffer never imports the trainer. Returns false when
   * the stage's algorithm computes no advantages here (PPO's GAE in the trainer; SFT and DPO have none).
   */
  advantage?: (exps: Experience[]) => boolean | void;
}

export interface DroppedExperience {
  experience: Experience;
  reason: string;
}

export interface ExperiencePipelineResult {
  /** Everything to store: trainable experiences, then the excluded ones (infra failures, kept invalid ones). */
  experiences: Experience[];
  /** Status 'ok': what the trainer may learn from. */
  trainable: Experience[];
  /** Status 'infra_failure' or 'invalid', marked `metadata.excludedFromTraining`. */
  excluded: Experience[];
  dropped: DroppedExperience[];
  /** Counts per reason, e.g. {'in': 64, 'invalid:empty_response': 2, 'dropped:zero_variance': 8, 'infra_failure': 1}. */
  counts: Record<string, number>;
}
