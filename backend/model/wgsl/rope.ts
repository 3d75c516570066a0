// Rotary embeddings in Hugging Face's rotate-half layout as one dispatch (tfjs: two slices, a
// rotate-half matmul, two products and a sum), and its gradient, the inverse rotation, as another.
import * as tf from '@tensorflow/tfjs-core';
import { GROUP_INDEX, grid, runWgsl, wgslKernel } from './runner.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];
const WG = 256;

// out_i = x_i cos_i + rot(x)_i sin_i, rot(x) = [-x2, x1] over the halves of the head dimension. The
// gradient is dx_i = dy_i cos_i - rot(dy)_i sin_partner(i) (back = 1), exact for any tables.
export const kernel = wgslKernel(
  'rope',
  {
    inputs: [
      ['x', 'f32'],
      ['cosT', 'f32'],
      ['sinT', 'f32'],
    ],
    outputs: [['y', 'f32']],
    uniforms: [
      ['n', 'u32'],
      ['hd', 'u32'],
      ['posStride', 'u32'],
      ['T', 'u32'],
      ['start', 'u32'],
      ['back', 'u32'],
    ],
  },
  `
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  ${GROUP_INDEX}
  let idx = group * ${WG}u + lid;
  if (idx >= u.n) { return; }
  let half = u.hd / 2u;
  let i = idx % u.hd;
  let pos = (idx / u.posStride) % u.T + u.start;
  var partner: u32;
  var rot: f32;
  if (i < half) { partner = idx + half; rot = -x[partner]; } else { partner = idx - half; rot = x[partner]; }
  var si = pos * u.hd + i;
  var sgn = 1.0;
  if (u.back == 1u) { si = pos * u.hd + (partner % u.hd); sgn = -1.0; }
  y[idx] = x[idx] * cosT[pos * u.hd + i] + sgn * rot * sinT[si];
}`,
);

/**
 * Rotary embeddings of x at positions start..start+T-1, where the position axis is at `posAxis`
 * (1 for [B, T, heads, hd], 2 for [B, heads, T, hd]); cos/sin are the [maxLen, hd] tables.
 */
export function ropeWgsl(
  x: tf.Tensor4D,
  cos: tf.Tensor2D,
  sin: tf.Tensor2D,
  start: number,
  posAxis: 1 | 2,
): tf.Tensor4D {
  const hd = x.shape[3];
  const T = x.shape[posAxis]; // positions in the tables: checked by the caller (layers.ts rope)
  const posStride = posAxis === 1 ? x.shape[2] * hd : hd;
  const n = x.size;
  const run = (t: tf.Tensor, c: tf.Tensor, s: tf.Tensor, back: number) =>
    runWgsl({
      kernel,
      inputs: [t, c, s],
      outputs: [{ shape: x.shape }],
      uniforms: { n, hd, posStride, T, start, back },
      workgroups: grid(n, WG),
    })[0]!;
  const f = tf.customGrad(((xi: tf.Tensor, save: tf.GradSaveFunc) => {
    save([cos, sin]); // kept for the backward pass, which may come after the caller disposed the tables
    return {
      value: run(xi, cos, sin, 0),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [run(dy, saved[0]!, saved[1]!, 1)],
    };
  }) as unknown as CustomGradFn);
  return f(x) as tf.Tensor4D;
}
