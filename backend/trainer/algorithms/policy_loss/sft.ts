// SFT: negative log-likelihood of the trained tokens, AGG(-logprob).
// Params: lossAggMode (token-mean).
import { tf } from '../../../model/engine.js';
import { aggregate, assertAggMode } from '../aggregate.js';
import { fillMasked } from '../masked.js';
import { resolveParams } from '../params.js';
import type { AggMode, LossResult, PolicyLossInputs } from '../types.js';
import { definePolicyLoss } from './define.js';

export interface SftParams {
  lossAggMode: AggMode;
}
export const SFT_DEFAULTS: SftParams = { lossAggMode: 'token-mean' };

/**
 * SFT over the positions of `mask`, seq-mean modes dividing by `rows`; `weight` (a constant per-token
 * tensor) scales each token's NLL (CHORD's phi).
 */
export function sftCore(
  logprob: tf.Tensor2D,
  mask: tf.Tensor2D,
  mode: AggMode,
  rows?: number,
  weight?: tf.Tensor2D,
): tf.Scalar {
  assertAggMode(mode);
  let nll = tf.neg(fillMasked(logprob, mask)) as tf.Tensor2D;
  if (weight) nll = tf.mul(nll, fillMasked(weight, mask)) as tf.Tensor2D;
  return aggregate(nll, mask, mode, rows);
}

export const sftLoss = definePolicyLoss<SftParams>({
  name: 'sft',
  description: 'supervised fine-tuning (negative log-likelihood)',
  defaults: SFT_DEFAULTS,
  requires: [],
  compute(inputs: PolicyLossInputs, given?: Partial<SftParams>): LossResult {
    const p = resolveParams('policy loss', 'sft', SFT_DEFAULTS, given);
    const loss = sftCore(inputs.logprob, inputs.actionMask, p.lossAggMode);
    return { loss, metrics: { sft_loss: loss } };
  },
});
