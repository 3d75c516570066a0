// Small helpers both stores share: row decoding for the side tables and the guard of feedback mutations.
import type { Experience, Feedback, Task } from '../../core/types.js';
import { canonicalJson } from './codec.js';
import { ConflictError, InputError } from '../../core/errors.js';
import type {
  CheckpointRecord,
  FeedbackAction,
  FeedbackLogEntry,
  FeedbackMutation,
  PairOrigin,
  PreferencePair,
} from './types.js';

export function feedbackFromRow(r: Record<string, unknown>): FeedbackLogEntry {
  return {
    id: Number(r.id),
    experienceId: String(r.experience_id),
    who: String(r.who),
    at: Number(r.at),
    action: String(r.action) as FeedbackAction,
    before: JSON.parse(String(r.before)) as unknown,
    after: JSON.parse(String(r.after)) as unknown,
    undoes: r.undoes === null || r.undoes === undefined ? null : Number(r.undoes),
    undoneBy: r.undone_by === null || r.undone_by === undefined ? null : Number(r.undone_by),
  };
}

export function checkpointFromRow(r: Record<string, unknown>): CheckpointRecord {
  return {
    runId: String(r.run_id),
    version: Number(r.version),
    path: String(r.path),
    checksum: String(r.checksum),
    createdAt: Number(r.created_at),
  };
}

export function pairFromRow(r: Record<string, unknown>): PreferencePair {
  return {
    id: String(r.id),
    runId: String(r.run_id),
    taskId: String(r.task_id),
    chosenId: String(r.chosen_id),
    rejectedId: String(r.rejected_id),
    origin: String(r.origin) as PairOrigin,
    createdAt: Number(r.created_at),
    useCount: Number(r.use_count),
  };
}

/** Refuses a pair that is not one: a response preferred to itself, or a missing field. */
export function checkPair(p: Omit<PreferencePair, 'useCount'>, at: string): void {
  for (const k of ['id', 'runId', 'taskId', 'chosenId', 'rejectedId', 'origin'] as const) {
    if (typeof p[k] !== 'string' || p[k] === '') throw new InputError(`${at}.${k}: expected a non-empty string`);
  }
  if (p.chosenId === p.rejectedId)
    throw new InputError(`${at}: chosen and rejected are the same experience '${p.chosenId}'`);
  if (!Number.isFinite(p.createdAt)) throw new InputError(`${at}.createdAt: expected a finite number`);
}

export function taskFromRow(r: Record<string, unknown>): Task {
  return JSON.parse(String(r.body)) as Task;
}

/** Guard of an in-place update: the current source + feedback must be what the change expects. */
export function checkUpdateGuard(
  m: NonNullable<FeedbackMutation['update']>,
  current: { source: string; feedback: Feedback | null } | null,
): void {
  if (!current) throw new ConflictError(`experience '${m.id}' not found`);
  if (
    current.source !== m.expect.source ||
    canonicalJson(current.feedback ?? null) !== canonicalJson(m.expect.feedback ?? null)
  ) {
    throw new ConflictError(
      `experience '${m.id}' changed since (now source=${current.source}, feedback=${JSON.stringify(current.feedback ?? null)})`,
    );
  }
}

/** Guard of a delete: the row must be what was created (use counts may have grown since). */
export function checkDeleteGuard(m: NonNullable<FeedbackMutation['delete']>, current: Experience | null): void {
  if (!current) throw new ConflictError(`experience '${m.id}' not found`);
  const strip = (e: Experience) => canonicalJson({ ...e, useCount: 0 });
  if (strip(current) !== strip(m.expect)) throw new ConflictError(`experience '${m.id}' changed since it was created`);
}

export function feedbackOfExtra(extra: string): Feedback | null {
  return ((JSON.parse(extra) as { feedback?: Feedback }).feedback ?? null) as Feedback | null;
}

/** New extra JSON with the feedback replaced (null removes it). */
export function extraWithFeedback(extra: string, fb: Feedback | null): string {
  const x = JSON.parse(extra) as Record<string, unknown>;
  if (fb) x.feedback = fb;
  else delete x.feedback;
  return JSON.stringify(x);
}

export function trainableOf(status: string, split: string | null, fb: Feedback | null): number {
  return status === 'ok' && split !== 'eval' && !fb?.rejected ? 1 : 0;
}

export function statsMaps(rows: { k: string; n: number }[]): Record<string, number> {
  return Object.fromEntries(rows.map((r) => [r.k, Number(r.n)]));
}
