// Entropy bonus. H = logsumexp(z) - Σ_v softmax(z)_v·z_v with z = logits / temperature (= -Σ p log p).
// entropy_loss = AGG(H) over all rows ('default') or over the non-expert rows only ('mix': expert rows
// are dropped, so a seq-mean counts usual rows); loss = entropyCoef · entropy_loss, which the actor
// loss SUBTRACTS (a bonus: higher entropy, lower loss).
// Params: entropyCoef (0: off by default), lossAggMode (token-mean), entropyLossFn ('default' | 'mix').
import { InputError } from '../../core/errors.js';
import { tf } from '../../model/engine.js';
import { aggregate, assertAggMode } from './aggregate.js';
import { fillMasked, maskBool, restrictRows, rowFlags } from './masked.js';
import { resolveParams } from './params.js';
import type { AggMode, LossResult } from './types.js';

export interface EntropyParams {
  entropyCoef: number;
  lossAggMode: AggMode;
  entropyLossFn: 'default' | 'mix';
}
export const ENTROPY_DEFAULTS: EntropyParams = { entropyCoef: 0, lossAggMode: 'token-mean', entropyLossFn: 'default' };

/**
 * Per-position entropy [B, T] from logits [B, T, V]. With `actionMask`, logits of masked positions
 * are replaced by zeros first, so NaN/inf there cannot reach the result or the gradient.
 */
export function entropyFromLogits(logits: tf.Tensor3D, temperature = 1, actionMask?: tf.Tensor2D): tf.Tensor2D {
  if (!(temperature > 0)) throw new InputError(`entropy: temperature must be > 0, got ${temperature}`);
  let z: tf.Tensor3D = logits;
  if (actionMask) {
    const cond = tf.broadcastTo(tf.expandDims(maskBool(actionMask), 2), logits.shape);
    z = tf.where(cond, logits, tf.zerosLike(logits)) as tf.Tensor3D;
  }
  if (temperature !== 1) z = tf.div(z, temperature) as tf.Tensor3D;
  const lse = tf.logSumExp(z, -1);
  const p = tf.softmax(z, -1);
  return tf.sub(lse, tf.sum(tf.mul(p, z), -1)) as tf.Tensor2D;
}

export interface EntropyInputs {
  /** Per-position entropy [B, T] (from entropyFromLogits or the model's log-prob pass). */
  entropy: tf.Tensor2D;
  actionMask: tf.Tensor2D;
  /** [B] 0/1, needed by the 'mix' variant. */
  expertMask?: tf.Tensor1D;
}

export function entropyLoss(inputs: EntropyInputs, given?: Partial<EntropyParams>): LossResult {
  const p = resolveParams('entropy', 'entropy', ENTROPY_DEFAULTS, given);
  assertAggMode(p.lossAggMode);
  if (p.entropyLossFn !== 'default' && p.entropyLossFn !== 'mix') {
    throw new InputError(`entropy: entropyLossFn must be 'default' or 'mix', got '${p.entropyLossFn}'`);
  }
  let mask = inputs.actionMask;
  let rows: number | undefined;
  if (p.entropyLossFn === 'mix') {
    if (!inputs.expertMask) throw new Error("entropy: entropyLossFn 'mix' needs expertMask");
    mask = restrictRows(mask, tf.sub(1, inputs.expertMask) as tf.Tensor1D);
    rows = rowFlags(inputs.expertMask).filter((e) => !e).length;
  }
  const H = fillMasked(inputs.entropy, mask);
  const entropy_loss = aggregate(H, mask, p.lossAggMode, rows);
  const loss = tf.mul(entropy_loss, p.entropyCoef) as tf.Scalar;
  return { loss, metrics: { entropy_loss }, details: { entropy: inputs.entropy } };
}
