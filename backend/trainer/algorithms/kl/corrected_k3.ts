// corrected_k3: k3 weighted by the clamped importance ratio clamp(exp(logprob - old), 0, 2), which
// corrects for sampling from the old policy; plain k3 when no old log-probs are given.
import { tf } from '../../../model/engine.js';
import { defineKl } from './define.js';
import { k3Scalar, k3Tensor } from './k3.js';

export const correctedK3 = defineKl({
  name: 'corrected_k3',
  description: 'importance-weighted k3',
  usesOldLogprob: true,
  tensor: (lp, ref, old) => {
    const k = k3Tensor(lp, ref);
    if (!old) return k;
    return tf.mul(tf.clipByValue(tf.exp(tf.sub(lp, old)), 0, 2), k);
  },
  scalar: (lp, ref, old) => {
    const k = k3Scalar(lp, ref);
    if (old === undefined) return k;
    return Math.min(Math.max(Math.exp(lp - old), 0), 2) * k;
  },
});
