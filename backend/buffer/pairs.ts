// Preference pairs for DPO, derived from what the buffer holds and stored as pairs (table `pairs`):
// - curation: a promoted response (its expert copy, edited or not) is chosen over a rejected
//   response of the same task;
// - rating: of two rated responses of the same task, the higher rated is chosen;
// - long2short: the experience pipeline's long2short operator marked the rejected experience with
//   the shortest correct sample of its group (metadata.long2short.chosen).
// Both sides must share the prompt exactly (the same prompt tokens), be trainable (status ok) and
// be train split. Pairs are derived again on every sync, so an undone promotion / rejection / rating
// removes its pairs; pairs that survive keep their use counts.
import type { Experience } from '../core/types.js';
import { PAIR_ORIGINS, type ExperienceStore, type PairOrigin, type PreferencePair } from './storage/types.js';

export type PairDraft = Omit<PreferencePair, 'useCount'>;

export const pairId = (origin: PairOrigin, chosenId: string, rejectedId: string): string =>
  `${origin}:${chosenId}>${rejectedId}`;

function samePrompt(a: Experience, b: Experience): boolean {
  if (a.taskId !== b.taskId || a.promptTokens.length !== b.promptTokens.length) return false;
  for (let i = 0; i < a.promptTokens.length; i++) if (a.promptTokens[i] !== b.promptTokens[i]) return false;
  return true;
}

/** The pairs a run's experiences make (deterministic: the same buffer gives the same pairs). */
export function derivePairs(runId: string, exps: Experience[]): PairDraft[] {
  const usable = exps.filter((e) => e.status === 'ok' && e.split !== 'eval');
  const byId = new Map(usable.map((e) => [e.id, e]));
  const out = new Map<string, PairDraft>();
  const add = (origin: PairOrigin, c: Experience, r: Experience) => {
    if (c.id === r.id || !samePrompt(c, r)) return;
    const id = pairId(origin, c.id, r.id);
    out.set(id, {
      id,
      runId,
      taskId: c.taskId,
      chosenId: c.id,
      rejectedId: r.id,
      origin,
      createdAt: Math.max(c.createdAt, r.createdAt),
    });
  };
  const byTask = new Map<string, Experience[]>();
  for (const e of usable) (byTask.get(e.taskId) ?? byTask.set(e.taskId, []).get(e.taskId)!).push(e);
  for (const task of byTask.values()) {
    const rejected = task.filter((e) => e.feedback?.rejected === true);
    // The expert copy carries the promoted (possibly edited) response; a copy rejected later is no choice.
    const promoted = task.filter(
      (e) => e.source === 'expert' && typeof e.metadata?.promotedFrom === 'string' && e.feedback?.rejected !== true,
    );
    for (const c of promoted) for (const r of rejected) if (r.id !== c.metadata!.promotedFrom) add('curation', c, r);
    const rated = task.filter((e) => typeof e.feedback?.rating === 'number' && e.feedback.rejected !== true);
    for (const a of rated) for (const b of rated) if (a.feedback!.rating! > b.feedback!.rating!) add('rating', a, b);
  }
  for (const r of usable) {
    const mark = r.metadata?.long2short as { chosen?: unknown } | undefined;
    const c = typeof mark?.chosen === 'string' ? byId.get(mark.chosen) : undefined;
    if (c) add('long2short', c, r);
  }
  return [...out.values()];
}

const SCAN_PAGE = 1000;

async function runExperiences(store: ExperienceStore, runId: string): Promise<Experience[]> {
  const exps: Experience[] = [];
  for (let after = 0; ; ) {
    const page = await store.scan(after, SCAN_PAGE, runId);
    for (const r of page) exps.push(r.experience);
    if (page.length < SCAN_PAGE) break;
    after = page[page.length - 1]!.seq;
  }
  return exps;
}

function countByOrigin(pairs: PairDraft[]): Record<PairOrigin, number> {
  const counts = Object.fromEntries(PAIR_ORIGINS.map((o) => [o, 0])) as Record<PairOrigin, number>;
  for (const p of pairs) counts[p.origin]++;
  return counts;
}

/** Derive the run's pairs from its experiences and store them; counts per origin. */
export async function syncPairs(store: ExperienceStore, runId: string): Promise<Record<PairOrigin, number>> {
  const pairs = derivePairs(runId, await runExperiences(store, runId));
  await store.replacePairs(runId, PAIR_ORIGINS, pairs);
  return countByOrigin(pairs);
}

/** The pairs the run's buffer makes now, per origin, without storing them (a view's question). */
export async function pairCounts(store: ExperienceStore, runId: string): Promise<Record<PairOrigin, number>> {
  return countByOrigin(derivePairs(runId, await runExperiences(store, runId)));
}

/**
 * The experiences of `pairs` as trainer rows: chosen, rejected, chosen, rejected... (the layout the
 * `dpo` loss reads). A pair whose experience is gone, or whose two sides do not share the prompt, is
 * left out (counted in `broken`), so no row is ever paired with another prompt's.
 */
export async function pairRows(
  store: ExperienceStore,
  pairs: PreferencePair[],
): Promise<{ rows: Experience[]; broken: string[] }> {
  const got = new Map((await store.getMany(pairs.flatMap((p) => [p.chosenId, p.rejectedId]))).map((e) => [e.id, e]));
  const rows: Experience[] = [];
  const broken: string[] = [];
  for (const p of pairs) {
    const c = got.get(p.chosenId);
    const r = got.get(p.rejectedId);
    if (!c || !r || !samePrompt(c, r)) broken.push(p.id);
    else rows.push(c, r);
  }
  return { rows, broken };
}
