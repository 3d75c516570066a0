// synchronizer.mode names how far the explorer may run ahead of the trainer: sync (it waits for the
// newest weights, sync_offset 0), one_step_off (one version ahead, sync_offset 1) and async (it never
// waits for weights: each explore step loads the newest published version and goes on; only
// buffer.max_staleness bounds how old the experiences the trainer takes may be). sync_offset stays
// the general knob; a mode that contradicts it is an error on the field, not a silent choice. Every
// mode works with placement memory (placement/memory-explorer.ts) and checkpoint, and in distributed runs.
import type { z } from 'zod';

export const SYNC_MODES = ['sync', 'one_step_off', 'async'] as const;
export type SyncMode = (typeof SYNC_MODES)[number];

interface SyncInput {
  mode?: SyncMode;
  sync_interval: number;
  sync_offset?: number;
}

const OFFSET: Record<Exclude<SyncMode, 'async'>, number> = { sync: 0, one_step_off: 1 };

/** Conflicts between synchronizer.mode and the other synchronizer fields (zod superRefine). */
export function syncModeIssues(s: SyncInput, ctx: z.RefinementCtx): void {
  if (s.mode === undefined) return;
  // A run folder's config.yaml is written back with defaults filled in: async with sync_offset 0 is that, not a conflict.
  if (s.sync_offset === undefined || (s.mode === 'async' && s.sync_offset === 0)) return;
  if (s.mode === 'async')
    ctx.addIssue({
      code: 'custom',
      path: ['sync_offset'],
      message: `not read with synchronizer.mode async (the explorer never waits for weights; buffer.max_staleness bounds staleness); remove it`,
    });
  else if (s.sync_offset !== OFFSET[s.mode])
    ctx.addIssue({
      code: 'custom',
      path: ['sync_offset'],
      message: `${s.sync_offset} contradicts synchronizer.mode ${s.mode} (sync_offset ${OFFSET[s.mode]}); give one of them`,
    });
}

/**
 * The parsed synchronizer: sync_offset filled from the mode. The mode stays as given (not derived
 * from sync_offset), so code that changes sync_offset on a parsed config and validates it again
 * does not meet a mode it never wrote.
 */
export function resolveSyncMode<T extends SyncInput>(s: T): Omit<T, 'sync_offset'> & { sync_offset: number } {
  return { ...s, sync_offset: s.sync_offset ?? (s.mode === 'one_step_off' ? 1 : 0) };
}
