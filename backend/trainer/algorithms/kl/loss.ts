// KL used as a loss term: kl_loss = AGG(kl) (logged), loss = kl_coef · kl_loss (added to the actor loss).
import { tf } from '../../../model/engine.js';
import { aggregate, assertAggMode } from '../aggregate.js';
import { fillMasked, maskBool } from '../masked.js';
import { resolveParams } from '../params.js';
import type { AggMode, LossResult } from '../types.js';
import { klFns } from './registry.js';

export interface KlLossParams {
  klCoef: number;
  lossAggMode: AggMode;
}
export const KL_LOSS_DEFAULTS: KlLossParams = { klCoef: 0.001, lossAggMode: 'token-mean' };

export interface KlInputs {
  logprob: tf.Tensor2D;
  refLogprob: tf.Tensor2D;
  oldLogprob?: tf.Tensor2D;
  actionMask: tf.Tensor2D;
}

export function klLoss(fnName: string, inputs: KlInputs, given?: Partial<KlLossParams>): LossResult {
  const fn = klFns.get(fnName);
  const p = resolveParams('kl loss', fnName, KL_LOSS_DEFAULTS, given);
  assertAggMode(p.lossAggMode);
  const m = maskBool(inputs.actionMask);
  // Inputs are zeroed on masked positions first, so no NaN/inf there reaches the gradient either.
  const lp = fillMasked(inputs.logprob, m);
  const ref = fillMasked(inputs.refLogprob, m);
  const old = inputs.oldLogprob && fn.usesOldLogprob ? fillMasked(inputs.oldLogprob, m) : undefined;
  const kl = fn.tensor(lp, ref, old) as tf.Tensor2D;
  const kl_loss = aggregate(kl, inputs.actionMask, p.lossAggMode);
  const loss = tf.mul(kl_loss, p.klCoef) as tf.Scalar;
  return { loss, metrics: { kl_loss }, details: { kl } };
}
