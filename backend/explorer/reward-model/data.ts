// Training data for the learned reward model, from what people give in the editor: ratings on
// experiences (feedback.rating) and explicit preference pairs. Two rated answers to the same task
// with different ratings make a pair (the higher-rated one preferred).
import type { Experience } from '../../core/types.js';

export interface PreferencePair {
  prompt: number[];
  chosen: number[];
  rejected: number[];
}

export interface Rated {
  prompt: number[];
  response: number[];
  rating: number;
}

export interface PreferenceData {
  pairs: PreferencePair[];
  ratings: Rated[];
}

/** Pairs and ratings from rated experiences; unrated ones, rejected ones and infra failures are left out. */
export function preferenceData(exps: Experience[], extraPairs: PreferencePair[] = []): PreferenceData {
  const rated = exps.filter(
    (e) =>
      typeof e.feedback?.rating === 'number' &&
      Number.isFinite(e.feedback.rating) &&
      e.status !== 'infra_failure' &&
      !e.feedback.rejected,
  );
  const ratings = rated.map((e) => ({
    prompt: e.promptTokens,
    response: e.responseTokens,
    rating: e.feedback!.rating!,
  }));
  const byTask = new Map<string, Experience[]>();
  for (const e of rated) byTask.set(e.taskId, [...(byTask.get(e.taskId) ?? []), e]);
  const pairs: PreferencePair[] = [...extraPairs];
  for (const group of byTask.values()) {
    for (let i = 0; i < group.length; i++) {
      for (let j = i + 1; j < group.length; j++) {
        const a = group[i]!;
        const b = group[j]!;
        if (a.feedback!.rating === b.feedback!.rating) continue;
        const [hi, lo] = a.feedback!.rating! > b.feedback!.rating! ? [a, b] : [b, a];
        pairs.push({ prompt: hi.promptTokens, chosen: hi.responseTokens, rejected: lo.responseTokens });
      }
    }
  }
  return { pairs, ratings };
}
