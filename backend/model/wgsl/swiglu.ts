// SwiGLU's gating silu(g) * u and its gradient, one dispatch each (tfjs: 4 kernels forward, 9 back).
import * as tf from '@tensorflow/tfjs-core';
import { GROUP_INDEX, grid, runWgsl, wgslKernel } from './runner.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];
const WG = 256;

export const forward = wgslKernel(
  'swiglu',
  {
    inputs: [
      ['g', 'f32'],
      ['up', 'f32'],
    ],
    outputs: [['y', 'f32']],
    uniforms: [['n', 'u32']],
  },
  `
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  ${GROUP_INDEX}
  let i = group * ${WG}u + lid;
  if (i >= u.n) { return; }
  let x = g[i];
  y[i] = x / (1.0 + exp(-x)) * up[i];
}`,
);

// d/dg silu(g) = s (1 + g (1 - s)) with s = sigmoid(g).
export const backward = wgslKernel(
  'swiglu_grad',
  {
    inputs: [
      ['g', 'f32'],
      ['up', 'f32'],
      ['dy', 'f32'],
    ],
    outputs: [
      ['dg', 'f32'],
      ['du', 'f32'],
    ],
    uniforms: [['n', 'u32']],
  },
  `
@compute @workgroup_size(${WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  ${GROUP_INDEX}
  let i = group * ${WG}u + lid;
  if (i >= u.n) { return; }
  let x = g[i];
  let s = 1.0 / (1.0 + exp(-x));
  let d = dy[i];
  dg[i] = d * up[i] * s * (1.0 + x * (1.0 - s));
  du[i] = d * x * s;
}`,
);

/** silu(g) * up for g and up of the same shape, with its gradient. */
export function swigluWgsl(g: tf.Tensor, up: tf.Tensor): tf.Tensor {
  const n = g.size;
  const f = tf.customGrad(((gi: tf.Tensor, ui: tf.Tensor, save: tf.GradSaveFunc) => {
    save([gi, ui]);
    const [y] = runWgsl({
      kernel: forward,
      inputs: [gi, ui],
      outputs: [{ shape: gi.shape }],
      uniforms: { n },
      workgroups: grid(n, WG),
    });
    return {
      value: y!,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) =>
        runWgsl({
          kernel: backward,
          inputs: [saved[0]!, saved[1]!, dy],
          outputs: [{ shape: g.shape }, { shape: g.shape }],
          uniforms: { n },
          workgroups: grid(n, WG),
        }),
    };
  }) as unknown as CustomGradFn);
  return f(g, up) as tf.Tensor;
}
