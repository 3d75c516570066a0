// KL used as a reward penalty (no gradient): token_level_rewards - kl_coef · kl on trained tokens,
// computed from the behaviour and reference log-probs before the advantages.
import { klFns } from './registry.js';

export interface KlPenaltyResult {
  tokenLevelRewards: number[][];
  /** Per-token kl (0 on masked tokens). */
  kl: number[][];
  /** Mean kl over trained tokens (0 when none). */
  meanKl: number;
}

export function applyKlPenalty(
  fnName: string,
  tokenLevelRewards: number[][],
  logprob: number[][],
  refLogprob: number[][],
  actionMask: number[][],
  klCoef: number,
): KlPenaltyResult {
  const fn = klFns.get(fnName);
  let sum = 0;
  let n = 0;
  const kl = actionMask.map((row, b) =>
    row.map((m, t) => {
      if (!m) return 0;
      const v = fn.scalar(logprob[b]![t]!, refLogprob[b]![t]!);
      sum += v;
      n++;
      return v;
    }),
  );
  return {
    tokenLevelRewards: tokenLevelRewards.map((row, b) => row.map((r, t) => r - klCoef * kl[b]![t]!)),
    kl,
    meanKl: n ? sum / n : 0,
  };
}
