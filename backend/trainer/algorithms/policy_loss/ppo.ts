// PPO clipped surrogate (also the GRPO loss), with decoupled low/high clip, dual clip on negative
// advantages (always on), optional sequence masking, and the pure policy-gradient fallback.
//   d = clamp(logp - old, ±20), ρ = exp(d), L = max(-Aρ, -A·clamp(ρ, 1-lo, 1+hi)),
//   and for A < 0: L = min(L, -A·c).
// Params: clipRange (0.2), clipRangeLow / clipRangeHigh (null: clipRange), clipRatioC (3, > 1),
// lossAggMode (token-mean), enableSequenceMasking (false), deltaSequenceMasking (0.1),
// fallbackToPolicyGradient (false: use the behaviour log-probs).
import { InputError } from '../../../core/errors.js';
import { tf } from '../../../model/engine.js';
import { aggregate, assertAggMode } from '../aggregate.js';
import { fillMasked, maskBool, maskedMean, noGrad } from '../masked.js';
import { resolveParams } from '../params.js';
import type { AggMode, LossResult, PolicyLossInputs } from '../types.js';
import { definePolicyLoss } from './define.js';

export interface PpoParams {
  clipRange: number;
  clipRangeLow: number | null;
  clipRangeHigh: number | null;
  clipRatioC: number;
  lossAggMode: AggMode;
  enableSequenceMasking: boolean;
  deltaSequenceMasking: number;
  fallbackToPolicyGradient: boolean;
}

export const PPO_DEFAULTS: PpoParams = {
  clipRange: 0.2,
  clipRangeLow: null,
  clipRangeHigh: null,
  clipRatioC: 3.0,
  lossAggMode: 'token-mean',
  enableSequenceMasking: false,
  deltaSequenceMasking: 0.1,
  fallbackToPolicyGradient: false,
};

/**
 * The PPO loss over the positions of `mask` (which may have whole rows zeroed, as MIX does), with
 * seq-mean modes dividing by `rows`. Exported for the composite losses (MIX, CHORD).
 */
export function ppoCore(
  logprob: tf.Tensor2D,
  oldLogprob: tf.Tensor2D,
  advantages: tf.Tensor2D,
  mask: tf.Tensor2D,
  p: PpoParams,
  rows?: number,
): LossResult {
  assertAggMode(p.lossAggMode);
  if (!(p.clipRatioC > 1)) throw new InputError(`policy loss 'ppo': clipRatioC must be > 1, got ${p.clipRatioC}`);
  const lo = p.clipRangeLow ?? p.clipRange;
  const hi = p.clipRangeHigh ?? p.clipRange;
  const mb = maskBool(mask);
  const lp = fillMasked(logprob, mb);
  const A = fillMasked(advantages, mb);
  // Fallback: old = stop_gradient(logp), so ρ = 1 in value with the policy-gradient derivative.
  const old = p.fallbackToPolicyGradient ? noGrad((x) => tf.clone(x), lp) : fillMasked(oldLogprob, mb);
  const d = tf.clipByValue(tf.sub(lp, old), -20, 20);
  const ratio = tf.exp(d);
  const negA = tf.neg(A);
  const L1 = tf.mul(negA, ratio);
  const L2 = tf.mul(negA, tf.clipByValue(ratio, 1 - lo, 1 + hi));
  const Lmax = tf.maximum(L1, L2);
  const L3 = tf.mul(negA, p.clipRatioC);
  // The condition depends on the advantages only (constants): no comparison on the gradient path.
  const advNeg = tf.less(A, 0);
  let L = tf.where(advNeg, tf.minimum(L3, Lmax), Lmax) as tf.Tensor2D;

  const metrics: Record<string, tf.Scalar | number> = {};
  const details: Record<string, tf.Tensor> = { ratio };
  if (p.enableSequenceMasking) {
    const maskSum = tf.sum(mask, 1);
    const seqKl = noGrad((dd) => tf.div(tf.sum(tf.mul(tf.neg(dd), mask), 1), tf.add(maskSum, 1e-10)), d) as tf.Tensor1D;
    // As in the reference, drop is evaluated at every position from the raw advantages (NaN there
    // compares false), so seq_mask/masked_tokens also counts masked positions with A < 0; the loss
    // itself only ever sees unmasked positions.
    const drop = noGrad(
      (k, a) =>
        tf.cast(tf.logicalAnd(tf.less(a, 0), tf.expandDims(tf.greater(k, p.deltaSequenceMasking), 1)), 'float32'),
      seqKl,
      advantages,
    );
    L = tf.mul(L, tf.sub(1, drop)) as tf.Tensor2D;
    details.sequence_kl = seqKl;
    const nRows = rows ?? logprob.shape[0];
    // Rows zeroed out of `mask` have k = 0, so summing every row and dividing by `rows` is the mean.
    metrics['seq_mask/mean_sequence_kl'] = tf.div(tf.sum(seqKl), Math.max(nRows, 1)) as tf.Scalar;
    metrics['seq_mask/masked_tokens'] = tf.div(tf.sum(drop), tf.add(tf.sum(mask), 1e-10)) as tf.Scalar;
  }
  details.pg_losses = L;

  const loss = aggregate(L, mask, p.lossAggMode, rows);
  metrics.pg_loss = loss;
  // Metrics only (never part of the loss), so their comparisons stay off the gradient path.
  metrics.pg_clipfrac = maskedMean(tf.cast(tf.greater(L2, L1), 'float32'), mb) as tf.Scalar;
  metrics.pg_clipfrac_lower = maskedMean(
    tf.cast(tf.logicalAnd(tf.greater(Lmax, L3), advNeg), 'float32'),
    mb,
  ) as tf.Scalar;
  metrics.ppo_kl = maskedMean(tf.neg(d), mb) as tf.Scalar;
  return { loss, metrics, details };
}

export const ppoLoss = definePolicyLoss<PpoParams>({
  name: 'ppo',
  description: 'PPO clipped surrogate with dual clip (GRPO, PPO, RLOO, REINFORCE++)',
  defaults: PPO_DEFAULTS,
  requires: ['oldLogprob', 'advantages'],
  compute(inputs: PolicyLossInputs, given?: Partial<PpoParams>): LossResult {
    const p = resolveParams('policy loss', 'ppo', PPO_DEFAULTS, given);
    return ppoCore(inputs.logprob, inputs.oldLogprob!, inputs.advantages!, inputs.actionMask, p);
  },
});
