// OPMD policy loss (Kimi k1.5 style, with the OPMD advantage): AGG(-A·logprob) / (1 + tau).
// Params: tau (1.0), lossAggMode (token-mean).
import { tf } from '../../../model/engine.js';
import { aggregate, assertAggMode } from '../aggregate.js';
import { fillMasked, maskBool } from '../masked.js';
import { resolveParams } from '../params.js';
import type { AggMode, LossResult, PolicyLossInputs } from '../types.js';
import { definePolicyLoss } from './define.js';

export interface OpmdLossParams {
  tau: number;
  lossAggMode: AggMode;
}
export const OPMD_LOSS_DEFAULTS: OpmdLossParams = { tau: 1.0, lossAggMode: 'token-mean' };

export const opmdLoss = definePolicyLoss<OpmdLossParams>({
  name: 'opmd',
  description: 'online policy mirror descent surrogate (OPMD)',
  defaults: OPMD_LOSS_DEFAULTS,
  requires: ['advantages'],
  compute(inputs: PolicyLossInputs, given?: Partial<OpmdLossParams>): LossResult {
    const p = resolveParams('policy loss', 'opmd', OPMD_LOSS_DEFAULTS, given);
    assertAggMode(p.lossAggMode);
    const mb = maskBool(inputs.actionMask);
    const lp = fillMasked(inputs.logprob, mb);
    const A = fillMasked(inputs.advantages!, mb);
    const per = tf.neg(tf.mul(A, lp)) as tf.Tensor2D;
    const loss = tf.div(aggregate(per, inputs.actionMask, p.lossAggMode), 1 + p.tau) as tf.Scalar;
    return { loss, metrics: { opmd_loss: loss } };
  },
});
