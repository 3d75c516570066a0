// Placement `checkpoint` (explorer and trainer in their own processes): when a step may start. Trainer step t (its model version is t: one version per step)
// trains on the explore step that targets t. The trainer publishes a checkpoint whenever
// t % sync_interval === 0 and at the end of each stage. The explore step for t may start once a
// checkpoint >= requiredVersion(t) exists, i.e. the explorer runs at most sync_offset versions ahead
// of the trainer (sync_offset 0: synchronous; 1: one-step-off, rollout overlaps training).
// synchronizer.schedule async: no offset (Infinity), so a step needs only the stage's start checkpoint;
// the explorer loads the newest version before each step and never waits for a newer one. Its lead is
// bounded apart (explorer/explorer-loop.ts `lead`: step t waits while t - newest published > max_staleness).
import type { RunConfig } from '../core/config.js';

export interface SyncPlan {
  interval: number;
  offset: number;
  /** Version the trainer entered the current stage with (always published). */
  stageStartVersion: number;
}

/** How many versions the explorer may run ahead: Infinity in mode async. */
export function syncOffset(cfg: RunConfig): number {
  return cfg.synchronizer.schedule === 'async' ? Infinity : cfg.synchronizer.sync_offset;
}

export function requiredVersion(target: number, p: SyncPlan): number {
  const want = target - p.offset;
  const published = Math.floor(want / p.interval) * p.interval;
  return Math.max(p.stageStartVersion, published);
}

/**
 * The staleness the trainer's sampler allows: buffer.max_staleness, but outside async never more than
 * the schedule makes (sync_offset + sync_interval - 1). A sync step then trains on rows of its own
 * version only: the surplus a re-explored step leaves (FillingExplorer refills a step whose samples
 * came back empty) is not taken by the next step, which on the main job trained every sync MIX step
 * on 61 one-version-old rows and 3 fresh ones.
 */
export function samplerStaleness(cfg: RunConfig): number {
  // Partial rollouts: a trajectory finished over several steps (or waiting for its group) is older than the offset by design.
  if (cfg.synchronizer.schedule === 'async' || cfg.explorer.partial_rollout) return cfg.buffer.max_staleness;
  const { sync_interval: i, sync_offset: k } = cfg.synchronizer;
  return Math.min(cfg.buffer.max_staleness, k + i - 1);
}

/**
 * With sync_interval I and sync_offset k, the trainer at version t can get data made by version
 * t - k - (I - 1); a staleness bound tighter than that would make the trainer wait forever.
 */
export function checkSyncConfig(cfg: RunConfig): string | null {
  const { sync_interval: i, sync_offset: k } = cfg.synchronizer;
  // Async: the explorer's lead and the sampler are both bounded by max_staleness; but between two
  // publications the trainer moves i - 1 steps on, so rows of the newest published version are that
  // old by the time it samples: past the bound the trainer would wait for rows no one can make.
  if (cfg.synchronizer.schedule === 'async') {
    if (cfg.buffer.max_staleness < i - 1)
      return `buffer.max_staleness is ${cfg.buffer.max_staleness} but synchronizer.schedule async with sync_interval ${i} trains up to ${i - 1} steps past the newest published weights; set buffer.max_staleness >= ${i - 1} or sync_interval <= ${cfg.buffer.max_staleness + 1}`;
    return null;
  }
  const worst = k + i - 1;
  if (cfg.buffer.max_staleness < worst)
    return `buffer.max_staleness is ${cfg.buffer.max_staleness} but synchronizer sync_offset ${k} with sync_interval ${i} produces experiences up to ${worst} versions old; set buffer.max_staleness >= ${worst}`;
  return null;
}
