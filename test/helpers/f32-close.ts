// Bounds for comparing two f32 computations of the same quantity (issue 22).
//
// Two correct f32 paths that add in different orders differ by round-off, and round-off scales with
// the magnitude of what is summed, not with the result: a log-prob is logsumexp(logits) - logit, so
// its error is a few units of f32 precision (u = 2^-23) of the logits' magnitude, which is about the
// log-prob's own magnitude. Which order a product adds in depends on the BLAS kernel OpenBLAS picks
// for the CPU (AVX2, AVX-512, NEON) and on the call's shape (sgemm vs sgemv, in-heap tfjs vs the
// outside-heap sgemmExt), so an absolute bound tuned on one CPU fails on another: issue 22 saw
// 1.14e-5 on log-probs near 10 (9.6 u of the magnitude) on an AMD EPYC with AVX-512 against a bound
// of 1e-5. Bounds here are therefore `ulps` units of u times the largest magnitude involved.
//
// The tests that use this keep their positive controls (an adapter, a dropout mask or a step moves
// the values by >= 1e-3), and every bound below stays at least 10x under those at the sizes tested,
// so a path that drops a mask, an adapter or a bias still fails.
import assert from 'node:assert/strict';

/** f32 machine epsilon (the spacing of f32 values at 1). */
export const F32_EPS = 2 ** -23;

/** Units of F32_EPS per comparison kind, each justified by the arithmetic it covers. */
export const ULPS = {
  /** A copy or a single rounding (a weight merged as W + s*B*A with rank-sized sums, a re-export). */
  elementwise: 8,
  /**
   * Log-probs or logits of one model through two kernels: every value passes through L layers of
   * dot products over the hidden and FFN sizes and a log-sum-exp over the vocabulary; differences of
   * 1-10 u of the magnitude are seen across CPUs (issue 22: 9.6 u), 32 leaves room on every one.
   */
  forward: 32,
  /** After an optimiser step or a KV-cache decode: the forward's round-off, carried one more pass. */
  twoPasses: 128,
} as const;

export function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]!));
  return m;
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length, 'lengths differ');
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

/**
 * The bound for values of magnitude `scale` (at least 1: below that, logits of magnitude ~1 still round
 * at u). `vocab`: the values are log-probs whose two paths compute the log-sum-exp with different
 * reductions (the native decode's C loop vs tfjs's logSoftmax): a sum of V positive terms in two
 * orders differs by about sqrt(V) u relative (round-off as a random walk), so 2 sqrt(V) u is added;
 * 8.5e-5 at Llama-3's 128k, 3.2e-6 at a 256-token byte vocabulary.
 */
export function f32Bound(scale: number, ulps: number, vocab = 0): number {
  return F32_EPS * (ulps * Math.max(1, scale) + 2 * Math.sqrt(vocab));
}

/**
 * Asserts max |got - want| <= f32Bound(max(max|want|, max|got|), ulps, vocab) and returns the difference,
 * so the message names both the difference and the bound it was held to.
 */
export function assertF32Close(
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  ulps: number,
  what: string,
  vocab = 0,
): number {
  const d = maxAbsDiff(got, want);
  const bound = f32Bound(Math.max(maxAbs(want), maxAbs(got)), ulps, vocab);
  // RFT_TOL_REPORT=1 prints every comparison, to see how close a machine comes to its bounds.
  if (process.env.RFT_TOL_REPORT)
    console.log(
      `# f32-close ${what}: ${d.toExponential(2)} of ${bound.toExponential(2)} (${((100 * d) / bound).toFixed(0)}%)`,
    );
  assert.ok(
    d <= bound,
    `${what}: max |diff| ${d.toExponential(3)} > bound ${bound.toExponential(3)} (${ulps} f32 ulps of the magnitude)`,
  );
  return d;
}
