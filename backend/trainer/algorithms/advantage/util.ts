// Float64 helpers shared by the advantage functions.
import type { AdvantageInput, AdvantageInputName } from './types.js';

export function requireInputs(fn: string, input: AdvantageInput, names: readonly AdvantageInputName[]): void {
  const B = input.actionMask.length;
  for (const n of names) {
    const v = input[n];
    if (v === undefined) throw new Error(`advantage '${fn}': missing input '${n}'`);
    if (v.length !== B) throw new Error(`advantage '${fn}': input '${n}' has ${v.length} rows, actionMask has ${B}`);
  }
  for (const n of ['tokenLevelRewards', 'values'] as const) {
    const v = input[n];
    if (!v || !names.includes(n)) continue;
    v.forEach((row, b) => {
      if (row.length !== input.actionMask[b]!.length) {
        throw new Error(
          `advantage '${fn}': ${n}[${b}] has ${row.length} tokens, actionMask[${b}] has ${input.actionMask[b]!.length}`,
        );
      }
    });
  }
}

/** Row indices per group id, in order of first appearance. */
export function groupRows(groupIds: string[]): Map<string, number[]> {
  const groups = new Map<string, number[]>();
  groupIds.forEach((g, i) => {
    const rows = groups.get(g);
    if (rows) rows.push(i);
    else groups.set(g, [i]);
  });
  return groups;
}

export function mean(xs: number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s / xs.length;
}

/** Sample standard deviation (divides by k - 1), as torch.std. */
export function sampleStd(xs: number[]): number {
  const m = mean(xs);
  let s = 0;
  for (const x of xs) s += (x - m) * (x - m);
  return Math.sqrt(s / (xs.length - 1));
}

/** score_i · m[i][t] for every position. */
export function broadcastScores(scores: number[], mask: number[][]): number[][] {
  return mask.map((row, b) => row.map((m) => (m ? scores[b]! * m : 0)));
}

/**
 * Whitening over the unmasked tokens of the whole batch (Bessel-corrected variance), applied at every
 * position. Like the reference framework it refuses n ≤ 1, where the variance is undefined.
 */
export function whiten(x: number[][], mask: number[][], fn: string): number[][] {
  let n = 0;
  let s = 0;
  x.forEach((row, b) =>
    row.forEach((v, t) => {
      if (mask[b]![t]) {
        n += mask[b]![t]!;
        s += v * mask[b]![t]!;
      }
    }),
  );
  if (n <= 1) throw new Error(`advantage '${fn}': whitening needs at least 2 unmasked tokens in the batch, got ${n}`);
  const mu = s / (n + 1e-8);
  let ss = 0;
  x.forEach((row, b) =>
    row.forEach((v, t) => {
      if (mask[b]![t]) ss += (v - mu) * (v - mu) * mask[b]![t]!;
    }),
  );
  const variance = (ss / (n + 1e-8)) * (n / (n - 1));
  const inv = 1 / Math.sqrt(variance + 1e-8);
  return x.map((row) => row.map((v) => (v - mu) * inv));
}

/** Discounted reverse cumulative sum over all positions: G_t = r_t + gamma·G_{t+1}. */
export function discountedReturns(r: number[][], gamma: number): number[][] {
  return r.map((row) => {
    const out = new Array<number>(row.length);
    let g = 0;
    for (let t = row.length - 1; t >= 0; t--) {
      g = row[t]! + gamma * g;
      out[t] = g;
    }
    return out;
  });
}
