// k2: ½ (logprob - ref)² (the reference framework's default KL loss).
import { tf } from '../../../model/engine.js';
import { defineKl } from './define.js';

export const k2 = defineKl({
  name: 'k2',
  description: 'half squared log-ratio',
  usesOldLogprob: false,
  tensor: (lp, ref) => tf.mul(tf.square(tf.sub(lp, ref)), 0.5),
  scalar: (lp, ref) => 0.5 * (lp - ref) * (lp - ref),
});
