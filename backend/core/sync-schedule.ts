// synchronizer.schedule names how far the explorer may run ahead of the trainer: sync (it waits for the
// newest weights, sync_offset 0), one_step_off (one version ahead, sync_offset 1) and async (it never
// waits for weights: each explore step loads the newest published version and goes on; only
// buffer.max_staleness bounds how old the experiences the trainer takes may be). sync_offset stays
// the general knob; a schedule that contradicts it is an error on the field, not a silent choice. Every
// schedule works with placement memory (placement/memory-explorer.ts) and checkpoint, and in distributed runs.
import type { z } from 'zod';

export const SYNC_SCHEDULES = ['sync', 'one_step_off', 'async'] as const;
export type SyncSchedule = (typeof SYNC_SCHEDULES)[number];

interface SyncInput {
  schedule?: SyncSchedule;
  sync_interval: number;
  sync_offset?: number;
}

const OFFSET: Record<Exclude<SyncSchedule, 'async'>, number> = { sync: 0, one_step_off: 1 };

/** Conflicts between synchronizer.schedule and the other synchronizer fields (zod superRefine). */
export function syncScheduleIssues(s: SyncInput, ctx: z.RefinementCtx): void {
  if (s.schedule === undefined) return;
  // A run folder's config.yaml is written back with defaults filled in: async with sync_offset 0 is that, not a conflict.
  if (s.sync_offset === undefined || (s.schedule === 'async' && s.sync_offset === 0)) return;
  if (s.schedule === 'async')
    ctx.addIssue({
      code: 'custom',
      path: ['sync_offset'],
      message: `not read with synchronizer.schedule async (the explorer never waits for weights; buffer.max_staleness bounds staleness); remove it`,
    });
  else if (s.sync_offset !== OFFSET[s.schedule])
    ctx.addIssue({
      code: 'custom',
      path: ['sync_offset'],
      message: `${s.sync_offset} contradicts synchronizer.schedule ${s.schedule} (sync_offset ${OFFSET[s.schedule]}); give one of them`,
    });
}

/**
 * The parsed synchronizer: sync_offset filled from the schedule. The schedule stays as given (not derived
 * from sync_offset), so code that changes sync_offset on a parsed config and validates it again
 * does not meet a schedule it never wrote.
 */
export function resolveSyncSchedule<T extends SyncInput>(s: T): Omit<T, 'sync_offset'> & { sync_offset: number } {
  return { ...s, sync_offset: s.sync_offset ?? (s.schedule === 'one_step_off' ? 1 : 0) };
}
