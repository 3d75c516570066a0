// One AdamW update of a parameter in one dispatch: the new weights and both moments (tfjs: about a dozen kernels).
import * as tf from '@tensorflow/tfjs-core';
import type { AdamwStep } from '../fused-ops.js';
import { GROUP_INDEX, grid, runWgsl, wgslKernel } from './runner.js';

const WG = 256;

// Same arithmetic as optim.ts's tfjs path (c1 = 1 - b1 and c2 = 1 - b2 rounded once, as there):
// m' = b1 m + c1 g, v' = b2 v + c2 g^2,
// x' = x - lr ((m' / bc1) / (sqrt(v' / bc2) + eps) + wd x).
export const kernel = wgslKernel(
  'adamw',
  {
    inputs: [
      ['x', 'f32'],
      ['g', 'f32'],
      ['m', 'f32'],
      ['v', 'f32'],
    ],
    outputs: [
      ['x2', 'f32'],
      ['m2', 'f32'],
      ['v2', 'f32'],
    ],
    uniforms: [
      ['n', 'u32'],
      ['lr', 'f32'],
      ['b1', 'f32'],
      ['b2', 'f32'],
      ['c1', 'f32'],
      ['c2', 'f32'],
      ['eps', 'f32'],
      ['wd', 'f32'],
      ['bc1', 'f32'],
      ['bc2', 'f32'],
    ],
  },
  `
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  ${GROUP_INDEX}
  let i = group * ${WG}u + lid;
  if (i >= u.n) { return; }
  let gi = g[i];
  let mi = u.b1 * m[i] + u.c1 * gi;
  let vi = u.b2 * v[i] + u.c2 * gi * gi;
  m2[i] = mi;
  v2[i] = vi;
  let upd = (mi / u.bc1) / (sqrt(vi / u.bc2) + u.eps) + u.wd * x[i];
  x2[i] = x[i] - u.lr * upd;
}`,
);

/** The new [x, m, v] (fresh tensors; the caller assigns them). */
export function adamwWgsl(
  x: tf.Tensor,
  g: tf.Tensor,
  m: tf.Tensor,
  v: tf.Tensor,
  p: AdamwStep,
): [tf.Tensor, tf.Tensor, tf.Tensor] {
  const n = x.size;
  const gf = g.dtype === 'float32' ? g : tf.cast(g, 'float32');
  const out = runWgsl({
    kernel,
    inputs: [x, gf, m, v],
    outputs: [{ shape: x.shape }, { shape: x.shape }, { shape: x.shape }],
    uniforms: {
      n,
      lr: p.lr,
      b1: p.beta1,
      b2: p.beta2,
      c1: 1 - p.beta1,
      c2: 1 - p.beta2,
      eps: p.eps,
      wd: p.wd,
      bc1: p.bc1,
      bc2: p.bc2,
    },
    workgroups: grid(n, WG),
  });
  if (gf !== g) gf.dispose();
  return out as [tf.Tensor, tf.Tensor, tf.Tensor];
}
