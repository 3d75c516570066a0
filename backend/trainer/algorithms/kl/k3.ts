// k3: exp(x) - 1 - x with x = ref - logprob (unbiased, non-negative; no clamps).
import { tf } from '../../../model/engine.js';
import { defineKl } from './define.js';

export function k3Tensor(lp: tf.Tensor, ref: tf.Tensor): tf.Tensor {
  const x = tf.sub(ref, lp);
  return tf.sub(tf.sub(tf.exp(x), 1), x);
}

export function k3Scalar(lp: number, ref: number): number {
  const x = ref - lp;
  return Math.exp(x) - 1 - x;
}

export const k3 = defineKl({
  name: 'k3',
  description: 'exp(ref - logprob) - 1 - (ref - logprob)',
  usesOldLogprob: false,
  tensor: k3Tensor,
  scalar: k3Scalar,
});
