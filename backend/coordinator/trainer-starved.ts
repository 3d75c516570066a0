// Placement `checkpoint`, synchronizer.schedule async: whether the trainer process is stuck waiting for a batch the
// buffer cannot give it. The explorer process (explorer-process.ts) lets one explore step past its
// lead bound (max_staleness steps ahead of the newest published version) only then, so the bound can
// never deadlock a run (the rows the trainer waits for never came: partial rollouts that only later
// explore steps finish, rows rejected by feedback).
import type { ExperienceStore } from '../buffer/storage/types.js';

/** The trainer's consumer name in the buffer's consumption records (setup/trainer.ts samplerConfig). */
const CONSUMER = 'trainer';
/**
 * How long the trainer must have been waiting. Reads take whole batches, so rows in the buffer do not
 * tell whether they make one; a trainer that has its batch takes it within milliseconds of saying it
 * waits, so one still waiting after this, with nothing usual taken for its step, is starved.
 */
export const STARVED_AFTER_MS = 1000;

export async function trainerStarved(
  db: ExperienceStore,
  runId: string,
  published: number,
  now = Date.now(),
): Promise<boolean> {
  const st = await db.getState<{ state?: string; detail?: string | null; at?: number }>(runId, 'state:trainer');
  if (st?.state !== 'waiting' || !(typeof st.at === 'number' && now - st.at >= STARVED_AFTER_MS)) return false;
  // Its state line names the step it waits for (trainer/step-loop.ts: `batch for step N`); sync_interval > 1 puts it past `published`.
  const step = Math.max(published, Number(/step (\d+)/.exec(st.detail ?? '')?.[1] ?? published));
  // The state line lags the take (it is written after it): a step whose usual rows are recorded as
  // taken is training, not starved.
  const taken = await db.consumed(CONSUMER, step, runId);
  return !taken.length || !(await db.getMany(taken)).some((e) => e.source === 'usual');
}
