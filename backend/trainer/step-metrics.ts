// The metrics a trainer step returns (trainer.ts trainStep): the step's loss, timings, lr and the
// signals the collapse guard and the dashboard read, or the zeros of a step whose rows were all skipped.
import type { Experience } from '../core/types.js';
import { groupSpread } from './group-spread.js';
import type { StepSums } from './micro-step.js';
import { rolloutStats } from './step-parts.js';
import type { StepMetrics } from './trainer.js';

/** A step with no row left after screening: it counts, and says how many rows it skipped. */
export function emptyStepMetrics(step: number, totalS: number, skipped: number): StepMetrics {
  return {
    step,
    loss: 0,
    grad_norm: 0,
    lr: 0,
    tokens: 0,
    tokens_per_s: 0,
    staleness: 0,
    time_grad_s: 0,
    time_optim_s: 0,
    time_total_s: totalS,
    expert_rows: 0,
    skipped_experiences: skipped,
  };
}

export interface StepFigures {
  step: number;
  /** The actor's version before the update (staleness is measured from it). */
  modelVersion: number;
  exps: Experience[];
  skipped: number;
  acc: StepSums;
  gradNorm: number;
  lr: number;
  microBatch: number;
  tOpt: number;
  totalS: number;
  rewardKl?: number;
  updateKl: { kl: number; tokens: number };
  klTarget?: number;
  /** `lr: auto`'s lr for the next step (reported with the KL target). */
  lrNext?: number;
}

export function stepMetrics(f: StepFigures): StepMetrics {
  const { sums, refKl, tokens } = f.acc;
  const { exps, modelVersion, updateKl: uk, klTarget, rewardKl } = f;
  const usual = exps.filter((e) => e.source === 'usual' && e.modelVersion >= 0);
  return {
    ...sums,
    step: f.step,
    loss: sums.loss ?? 0,
    grad_norm: f.gradNorm,
    lr: f.lr,
    tokens,
    tokens_per_s: tokens / f.totalS,
    micro_batch: f.microBatch,
    staleness: usual.length ? usual.reduce((a, e) => a + (modelVersion - e.modelVersion), 0) / usual.length : 0,
    time_grad_s: f.acc.tGrad,
    time_optim_s: f.tOpt,
    time_total_s: f.totalS,
    expert_rows: exps.length - exps.filter((e) => e.source !== 'expert').length,
    skipped_experiences: f.skipped,
    ...(rewardKl !== undefined ? { reward_kl: rewardKl } : {}),
    ...(refKl.tokens > 0 ? { ref_kl: refKl.sum / refKl.tokens } : {}),
    ...(uk.tokens > 0 ? { update_kl: uk.kl } : {}),
    ...(klTarget !== undefined ? { update_kl_target: klTarget, lr_next: f.lrNext! } : {}),
    ...rolloutStats(usual),
    ...groupSpread(usual),
  };
}
