// What a stage's trainer batch is, from the config alone: trainer.batch_size (or the stage's own
// batch_size) is the whole batch of a trainer step, expert rows included. An exploring stage without
// one trains one explore step's rollouts (tasks_per_step x repeat_times: its rollout share) plus, for
// MIX, the expert share that ratio asks beside them (16 rollouts at expert_ratio 0.5: 32 rows), however
// few the expert rows are: the expert share cycles through them (buffer/sampler/expert.ts). With a
// configured batch its usual share is honoured in every placement: a step is explored again with the
// same weights until the buffer holds it (the explorer's `need`, the distributed trainer's top-up
// jobs). A usual share smaller than one explore step is refused with the batch that fits: the rest of
// each step would go stale untrained.
import type { ConfigIssue, RunConfig } from '../core/config.js';
import { expertShare } from '../buffer/sampler/mixed.js';

/** The batch of a stage that trains on the buffer alone when neither trainer.batch_size nor the stage's batch_size is given. */
export const DEFAULT_TRAIN_BATCH = 64;

type StageLike = { batch_size?: number };

/** Rollouts one explore step makes (before the experience pipeline). */
export function exploreRows(cfg: RunConfig): number {
  return cfg.explorer.tasks_per_step * cfg.explorer.repeat_times;
}

/** The batch the config gives a stage, with the field that gives it; undefined when none does. */
export function configuredBatch(
  cfg: RunConfig,
  stage: StageLike,
  index?: number,
): { value: number; field: string } | undefined {
  if (stage.batch_size !== undefined)
    return { value: stage.batch_size, field: index === undefined ? 'batch_size' : `stages[${index}].batch_size` };
  if (cfg.trainer.batch_size !== undefined) return { value: cfg.trainer.batch_size, field: 'trainer.batch_size' };
  return undefined;
}

/** Usual (explored) rows of a batch of `batch` rows at expert share `ratio` (0 without experts). */
export function usualRows(batch: number, ratio: number): number {
  return batch - (ratio > 0 ? expertShare(batch, ratio) : 0);
}

/**
 * Trainable rows one explore step must yield for an exploring stage (FillingExplorer.need): the usual
 * share of the configured batch, or one explore step's rollouts when no batch is configured.
 */
export function exploreNeed(cfg: RunConfig, stage: StageLike, ratio: number): number {
  const c = configuredBatch(cfg, stage);
  return c ? Math.max(exploreRows(cfg), usualRows(c.value, ratio)) : exploreRows(cfg);
}

/** The issue of a configured batch too small for one explore step of an exploring stage, or undefined. */
export function exploringBatchIssue(
  cfg: RunConfig,
  stage: StageLike,
  index: number | undefined,
  ratio: number,
): ConfigIssue | undefined {
  const c = configuredBatch(cfg, stage, index);
  // (An expert ratio of 1 in an exploring stage is refused on its own, config-check.ts.)
  if (!c || ratio >= 1) return undefined;
  const per = exploreRows(cfg);
  const usual = usualRows(c.value, ratio);
  if (usual >= per) return undefined;
  const expert = c.value - usual;
  const least = leastBatch(per, ratio);
  const share = ratio > 0 ? ` (${expert} go to the expert share)` : '';
  return {
    path: c.field,
    message: `${c.value} rows leave ${usual} for rollouts${share}; one explore step makes ${per} (explorer.tasks_per_step ${cfg.explorer.tasks_per_step} x repeat_times ${cfg.explorer.repeat_times}). Fix: set ${c.field} to ${least}.`,
  };
}

/** An exploring stage's batch when none is configured: one explore step's rollouts plus the expert share at `ratio` beside them. */
export function defaultExploringBatch(per: number, ratio: number): number {
  return ratio > 0 ? leastBatch(per, ratio) : per;
}

/** The smallest batch whose usual share holds `per` rows at expert share `ratio`. */
export function leastBatch(per: number, ratio: number): number {
  let b = ratio > 0 ? Math.max(per, Math.floor(per / (1 - ratio))) : per;
  while (usualRows(b, ratio) < per) b++;
  return b;
}
