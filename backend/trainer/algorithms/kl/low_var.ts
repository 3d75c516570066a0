// low_var_kl: k3 with the log-ratio clamped to ±20 and the estimate clamped to ±10 (stable k3).
import { tf } from '../../../model/engine.js';
import { defineKl } from './define.js';

const clamp = (v: number, lo: number, hi: number): number => Math.min(Math.max(v, lo), hi);

export const lowVar = defineKl({
  name: 'low_var_kl',
  description: 'k3 with clamps (low variance)',
  usesOldLogprob: false,
  tensor: (lp, ref) => {
    const x = tf.clipByValue(tf.sub(ref, lp), -20, 20);
    return tf.clipByValue(tf.sub(tf.sub(tf.exp(x), x), 1), -10, 10);
  },
  scalar: (lp, ref) => {
    const x = clamp(ref - lp, -20, 20);
    return clamp(Math.exp(x) - x - 1, -10, 10);
  },
});
