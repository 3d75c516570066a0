// How well scores order preference pairs, and where to cut them: the figures `rft reward-model
// train` reports (held-out pairwise accuracy, its standard error, the length baseline) and the
// threshold a reward model's eval counts as "judged correct".

/** Share of pairs whose chosen score is higher; a tie counts half (a constant scorer reads 0.5, not 0). */
export function pairAccuracy(chosen: number[], rejected: number[]): number {
  if (chosen.length !== rejected.length)
    throw new Error(`pairAccuracy: ${chosen.length} chosen vs ${rejected.length} rejected scores`);
  if (chosen.length === 0) return NaN;
  let right = 0;
  chosen.forEach((c, i) => (right += c > rejected[i]! ? 1 : c === rejected[i]! ? 0.5 : 0));
  return right / chosen.length;
}

/** Binomial standard error of an accuracy over n pairs: how far a held-out figure can be from the truth. */
export function accuracyStderr(acc: number, n: number): number {
  return n > 0 ? Math.sqrt(Math.max(acc * (1 - acc), 0) / n) : NaN;
}

export interface LengthBaseline {
  /** The direction fitted on the training pairs: 'longer' or 'shorter' answers preferred. */
  prefers: 'longer' | 'shorter';
  /** Its accuracy on the held-out pairs (ties half). */
  accuracy: number;
}

/**
 * The length baseline: score = response length, in the direction that wins on the training pairs,
 * measured on the held-out pairs. A reward model that does not beat it learned nothing length does not say.
 */
export function lengthBaseline(
  train: { chosen: number[]; rejected: number[] }[],
  held: { chosen: number[]; rejected: number[] }[],
): LengthBaseline {
  const len = (ps: typeof train, sign: number) =>
    pairAccuracy(
      ps.map((p) => sign * p.chosen.length),
      ps.map((p) => sign * p.rejected.length),
    );
  const prefers = train.length === 0 || len(train, 1) >= 0.5 ? 'longer' : 'shorter';
  return { prefers, accuracy: len(held, prefers === 'longer' ? 1 : -1) };
}

/**
 * The raw score that best separates chosen answers (at or above) from rejected ones (below) on the
 * validation pairs: the midpoint between neighbouring scores with the most answers on their side.
 * A reward model's reward is sigmoid(score - threshold), so 0.5 is where "judged correct" starts.
 */
export function fitThreshold(chosen: number[], rejected: number[]): number {
  const all = [...chosen.map((s) => ({ s, good: true })), ...rejected.map((s) => ({ s, good: false }))].sort(
    (a, b) => a.s - b.s,
  );
  if (all.length === 0) return 0;
  // Everything at or above the cut is judged correct: start with the cut below the lowest score.
  let right = chosen.length;
  let best = right;
  let cut = all[0]!.s - 1;
  for (let i = 0; i < all.length; i++) {
    right += all[i]!.good ? -1 : 1;
    // Only between distinct scores can a cut fall.
    if (i + 1 < all.length && all[i + 1]!.s === all[i]!.s) continue;
    if (right > best) {
      best = right;
      cut = i + 1 < all.length ? (all[i]!.s + all[i + 1]!.s) / 2 : all[i]!.s + 1;
    }
  }
  return cut;
}
