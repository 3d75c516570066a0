// Run setup, the trainer's parts of a stage: the stages of a config, a stage's sampler, its batch
// and its trainer settings, the same in every placement. Nothing in setup/ imports run.ts or a
// placement.
import type { RunConfig } from '../../core/config.js';
import { InputError } from '../../core/errors.js';
import { resolveTrainerSettings } from '../../core/trainer-defaults.js';
import type { TrainerOptions } from '../../trainer/trainer.js';
import { samplerStaleness } from '../sync-plan.js';
import { DEFAULT_TRAIN_BATCH, defaultExploringBatch, leastBatch, usualRows } from '../stage-batch.js';
import { NO_EXPERTS } from '../expert-source.js';
import { stageExpertRatio, stageReads } from './stage-data.js';

export type Stage = NonNullable<RunConfig['stages']>[number];

/** The stages of a config; a config without `stages` is one stage `main` of its algorithm. */
export function stagesOf(cfg: RunConfig): Stage[] {
  return (
    cfg.stages ?? [
      {
        name: 'main',
        algorithm: cfg.algorithm,
        steps: cfg.trainer.steps,
        mode: cfg.mode === 'bench' || cfg.mode === 'serve' ? 'both' : cfg.mode,
        wall_seconds: undefined,
        lr: undefined,
        batch_size: undefined,
      },
    ]
  );
}

/** The sampler of a stage: the algorithm bundle's expert share (sampling.expertRatio, or params.expert_ratio). */
export function samplerConfig(
  algo: string,
  params: Record<string, unknown>,
  cfg: RunConfig,
  runId?: string,
): { consumer: string; maxStaleness: number; type: string; expertRatio?: number; usual?: string; runId?: string } {
  // runId: the sampler takes this run's experiences only (runs may share a database).
  // Never older rows than the synchronizer makes (sync-plan.ts samplerStaleness), within buffer.max_staleness.
  const base = { consumer: 'trainer', maxStaleness: samplerStaleness(cfg), ...(runId ? { runId } : {}) };
  const reads = stageReads({ name: algo, params });
  // DPO reads stored preference pairs of one prompt (backend/buffer/pairs.ts), never arbitrary rows.
  if (reads === 'pairs') return { ...base, type: 'pairs' };
  if (reads === 'expert') return { ...base, type: 'expert' };
  if (reads === 'mixed')
    return { ...base, type: 'mixed', expertRatio: stageExpertRatio({ name: algo, params }), usual: usualSampler(cfg) };
  return { ...base, type: usualSampler(cfg) };
}

/**
 * buffer.sampler, or the synchronizer's default: `fresh` (the newest rows within max_staleness) in
 * async, where the explorer runs ahead and FIFO would train the oldest allowed rows; `fifo` otherwise
 * (the staleness bound of sync and one_step_off already leaves only the rows the schedule makes).
 */
export function usualSampler(cfg: RunConfig): string {
  if (cfg.buffer.sampler !== undefined) return cfg.buffer.sampler;
  return cfg.synchronizer.schedule === 'async' ? 'fresh' : 'fifo';
}

/**
 * A stage's trainer batch in every placement (stage-batch.ts). An exploring stage without a configured
 * batch trains one explore step's rollouts plus, for MIX, the expert share beside them (the expert
 * sampler cycles through however few expert rows there are); with one (`configured`, given by `field`)
 * it trains that, expert share included. Each placement fills a step that is short of it (memory
 * lockstep and the explorer process explore the step again, the distributed trainer queues top-up
 * jobs). Train-only stages use the configured batch (default 64), capped by the expert data there is.
 * What is refused here is refused by the config check first (config-check.ts); these throws guard
 * configs that reach a stage without it (a distributed trainer's).
 */
export async function stageBatchSize(
  store: { count(f: { source: 'expert'; status: 'ok'; runId?: string }): Promise<number> },
  s: { type: string; expertRatio?: number; runId?: string },
  explores: boolean,
  configured: number | undefined,
  perExplore: number,
  field = 'trainer.batch_size',
): Promise<number> {
  const scope = s.runId ? { runId: s.runId } : {};
  // Stored preference pairs are reused data, not one explore step's output: the configured batch, whole pairs.
  if (s.type === 'pairs') {
    const batch = configured ?? DEFAULT_TRAIN_BATCH;
    if (batch % 2 !== 0)
      throw new InputError(`a DPO stage trains on (chosen, rejected) pairs: its batch_size must be even, got ${batch}`);
    return batch;
  }
  if (explores) {
    const ratio = s.type === 'mixed' ? (s.expertRatio ?? 0) : 0;
    if (configured !== undefined && usualRows(configured, ratio) < perExplore)
      throw new InputError(
        `${field} ${configured} leaves ${usualRows(configured, ratio)} rows for rollouts; one explore step makes ${perExplore}. Fix: set ${field} to ${leastBatch(perExplore, ratio)}.`,
      );
    if (!(ratio > 0)) return configured ?? perExplore;
    // Any expert row fills the share by cycling; none at all would leave the sampler waiting forever.
    const experts = await store.count({ source: 'expert', status: 'ok', ...scope });
    if (experts === 0) throw new InputError(`the stage ${NO_EXPERTS(Math.round(ratio * 100))}`);
    return configured ?? defaultExploringBatch(perExplore, ratio);
  }
  const batch = configured ?? DEFAULT_TRAIN_BATCH;
  if (s.type === 'expert') {
    const experts = await store.count({ source: 'expert', status: 'ok', ...scope });
    if (experts === 0)
      throw new InputError(
        'a train-only SFT stage needs expert experiences in the buffer (experts: in the config, or promote some)',
      );
    return Math.min(batch, experts);
  }
  return batch;
}

/** The trainer's settings for a stage: the stage's own lr and decay over the config's trainer defaults. */
export function trainerOptions(
  cfg: RunConfig,
  stage: { lr?: number | 'auto'; lr_decay?: TrainerOptions['decay']; min_lr_ratio?: number },
  padId: number,
): TrainerOptions {
  // Unset lr / warm-up / clip: the defaults of a pretrained checkpoint (lr auto) or of a preset from scratch.
  const t = resolveTrainerSettings(cfg, stage.lr);
  return {
    lr: t.lr,
    ...(t.auto ? { lrAuto: t.auto } : {}),
    warmupSteps: t.warmup_steps,
    decay: stage.lr_decay ?? cfg.trainer.lr_decay,
    minLrRatio: stage.min_lr_ratio ?? cfg.trainer.min_lr_ratio,
    weightDecay: cfg.trainer.weight_decay,
    gradClip: t.grad_clip,
    microBatchSize: cfg.trainer.micro_batch_size,
    // Log-probs are recomputed at the temperature the explorer sampled with.
    temperature: cfg.explorer.sampling.temperature || 1,
    padId,
  };
}
