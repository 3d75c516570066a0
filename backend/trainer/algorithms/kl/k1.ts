// k1: logprob - ref (unbiased, high variance, can be negative).
import { tf } from '../../../model/engine.js';
import { defineKl } from './define.js';

export const k1 = defineKl({
  name: 'k1',
  description: 'log-ratio logprob - ref',
  usesOldLogprob: false,
  tensor: (lp, ref) => tf.sub(lp, ref),
  scalar: (lp, ref) => lp - ref,
});
