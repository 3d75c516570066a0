// abs: |logprob - ref|.
import { tf } from '../../../model/engine.js';
import { defineKl } from './define.js';

export const absKl = defineKl({
  name: 'abs',
  description: 'absolute log-ratio',
  usesOldLogprob: false,
  tensor: (lp, ref) => tf.abs(tf.sub(lp, ref)),
  scalar: (lp, ref) => Math.abs(lp - ref),
});
