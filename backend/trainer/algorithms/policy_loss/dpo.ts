// DPO: rows alternate chosen (even) / rejected (odd). The rows are stored preference pairs of one
// prompt each, laid out by the pair sampler (backend/buffer/sampler/pairs.ts); the trainer keeps a
// pair whole (Objective.pairedRows). As in the reference framework, the log-ratios are summed over
// every pair of the micro-batch before the sigmoid (micro_batch_size 2: one DPO term per pair):
//   z = Σ_chosen (logp - ref) - Σ_rejected (logp - ref),
//   loss = -(1 - ls)·log σ(beta·z) - ls·log σ(-beta·z).
// Params: beta (0.1), labelSmoothing (0).
import { tf } from '../../../model/engine.js';
import { maskedSum } from '../masked.js';
import { resolveParams } from '../params.js';
import type { LossResult, PolicyLossInputs } from '../types.js';
import { definePolicyLoss } from './define.js';

export interface DpoParams {
  beta: number;
  labelSmoothing: number;
}
/** log σ(x) as -softplus(-x): tf.logSigmoid's gradient fails on wasm for non-leaf inputs. */
function logSigmoid(x: tf.Tensor): tf.Tensor {
  return tf.neg(tf.softplus(tf.neg(x)));
}

export const DPO_DEFAULTS: DpoParams = { beta: 0.1, labelSmoothing: 0 };

export const dpoLoss = definePolicyLoss<DpoParams>({
  name: 'dpo',
  description: 'direct preference optimisation over (chosen, rejected) row pairs',
  defaults: DPO_DEFAULTS,
  requires: ['refLogprob'],
  compute(inputs: PolicyLossInputs, given?: Partial<DpoParams>): LossResult {
    const p = resolveParams('policy loss', 'dpo', DPO_DEFAULTS, given);
    const B = inputs.logprob.shape[0];
    if (B % 2 !== 0) throw new Error(`policy loss 'dpo': needs (chosen, rejected) row pairs, got ${B} rows`);
    const even = tf.tensor1d(Array.from({ length: B }, (_, b) => (b % 2 === 0 ? 1 : 0)));
    const odd = tf.sub(1, even);
    const m = inputs.actionMask;
    const rowLogratio = tf.sub(maskedSum(inputs.logprob, m, 1), maskedSum(inputs.refLogprob!, m, 1));
    const chosen = tf.sum(tf.mul(rowLogratio, even)) as tf.Scalar;
    const rejected = tf.sum(tf.mul(rowLogratio, odd)) as tf.Scalar;
    const z = tf.sub(chosen, rejected) as tf.Scalar;
    const bz = tf.mul(z, p.beta);
    const loss = tf.sub(
      tf.mul(logSigmoid(bz), -(1 - p.labelSmoothing)),
      tf.mul(logSigmoid(tf.neg(bz)), p.labelSmoothing),
    ) as tf.Scalar;
    return {
      loss,
      metrics: {
        dpo_loss: loss,
        chosen_logratio: chosen,
        rejected_logratio: rejected,
        logits: z,
        chosen_reward: tf.mul(chosen, p.beta) as tf.Scalar,
        rejected_reward: tf.mul(rejected, p.beta) as tf.Scalar,
        accuracy_mean: tf.cast(tf.greater(chosen, rejected), 'float32') as tf.Scalar,
      },
    };
  },
});
