// The KL estimator unit: a per-token estimate in tensor form (the loss) and number form (the reward penalty).
import type { tf } from '../../../model/engine.js';

/**
 * One per-token KL estimator between the policy (logprob) and the reference (refLogprob), written
 * twice: on tensors (KL loss, differentiable) and on numbers (KL penalty on rewards, no gradient).
 */
export interface KlFn {
  name: string;
  description: string;
  /** Uses oldLogprob when given (importance-corrected estimators). */
  usesOldLogprob: boolean;
  tensor(logprob: tf.Tensor, refLogprob: tf.Tensor, oldLogprob?: tf.Tensor): tf.Tensor;
  scalar(logprob: number, refLogprob: number, oldLogprob?: number): number;
}
