// RMSNorm over the last axis, y = x / sqrt(mean(x^2) + eps) * w: one dispatch forward (a workgroup
// per row; tfjs: 6 kernels), two backward (the input gradient per row, then the weight's column sums).
import * as tf from '@tensorflow/tfjs-core';
import { GROUP_INDEX, grid, runWgsl, wgslKernel } from './runner.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];
const WG = 64;
const BUILTINS =
  '@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32';
/** WGSL: sums red[0..WG) into red[0] (all threads of the workgroup call it). */
const REDUCE = (arr: string) => `
  workgroupBarrier();
  for (var k = ${WG / 2}u; k > 0u; k = k >> 1u) {
    if (lid < k) { ${arr}[lid] = ${arr}[lid] + ${arr}[lid + k]; }
    workgroupBarrier();
  }`;

export const forward = wgslKernel(
  'rmsnorm',
  {
    inputs: [
      ['x', 'f32'],
      ['w', 'f32'],
    ],
    outputs: [['y', 'f32']],
    uniforms: [
      ['rows', 'u32'],
      ['D', 'u32'],
      ['eps', 'f32'],
    ],
  },
  `
var<workgroup> red: array<f32, ${WG}>;
@compute @workgroup_size(${WG})
fn main(${BUILTINS}) {
  ${GROUP_INDEX}
  if (group >= u.rows) { return; }
  let base = group * u.D;
  var s = 0.0;
  for (var j = lid; j < u.D; j = j + ${WG}u) { let v = x[base + j]; s = s + v * v; }
  red[lid] = s;
  ${REDUCE('red')}
  let r = inverseSqrt(red[0] / f32(u.D) + u.eps);
  for (var j = lid; j < u.D; j = j + ${WG}u) { y[base + j] = x[base + j] * r * w[j]; }
}`,
);

// dx_j = r w_j dy_j - x_j r^3 sum_k(dy_k w_k x_k) / D, r = 1 / sqrt(mean(x^2) + eps); r is kept for dw.
export const backwardRows = wgslKernel(
  'rmsnorm_grad_x',
  {
    inputs: [
      ['x', 'f32'],
      ['w', 'f32'],
      ['dy', 'f32'],
    ],
    outputs: [
      ['dx', 'f32'],
      ['rstd', 'f32'],
    ],
    uniforms: [
      ['rows', 'u32'],
      ['D', 'u32'],
      ['eps', 'f32'],
    ],
  },
  `
var<workgroup> red: array<f32, ${WG}>;
var<workgroup> red2: array<f32, ${WG}>;
@compute @workgroup_size(${WG})
fn main(${BUILTINS}) {
  ${GROUP_INDEX}
  if (group >= u.rows) { return; }
  let base = group * u.D;
  var s = 0.0;
  var t = 0.0;
  for (var j = lid; j < u.D; j = j + ${WG}u) {
    let v = x[base + j];
    s = s + v * v;
    t = t + dy[base + j] * w[j] * v;
  }
  red[lid] = s;
  red2[lid] = t;
  workgroupBarrier();
  for (var k = ${WG / 2}u; k > 0u; k = k >> 1u) {
    if (lid < k) { red[lid] = red[lid] + red[lid + k]; red2[lid] = red2[lid] + red2[lid + k]; }
    workgroupBarrier();
  }
  let r = inverseSqrt(red[0] / f32(u.D) + u.eps);
  let c = r * r * r * red2[0] / f32(u.D);
  for (var j = lid; j < u.D; j = j + ${WG}u) { dx[base + j] = r * w[j] * dy[base + j] - x[base + j] * c; }
  if (lid == 0u) { rstd[group] = r; }
}`,
);

// dw_j = sum over rows of dy_j x_j r: 16 columns per workgroup, 16 lanes over the rows each.
export const backwardWeight = wgslKernel(
  'rmsnorm_grad_w',
  {
    inputs: [
      ['x', 'f32'],
      ['dy', 'f32'],
      ['rstd', 'f32'],
    ],
    outputs: [['dw', 'f32']],
    uniforms: [
      ['rows', 'u32'],
      ['D', 'u32'],
    ],
  },
  `
var<workgroup> red: array<f32, 256>;
@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) l: vec3<u32>) {
  let col = wid.x * 16u + l.x;
  var s = 0.0;
  if (col < u.D) {
    for (var r = l.y; r < u.rows; r = r + 16u) { s = s + dy[r * u.D + col] * x[r * u.D + col] * rstd[r]; }
  }
  red[l.y * 16u + l.x] = s;
  workgroupBarrier();
  for (var k = 8u; k > 0u; k = k >> 1u) {
    if (l.y < k) { red[l.y * 16u + l.x] = red[l.y * 16u + l.x] + red[(l.y + k) * 16u + l.x]; }
    workgroupBarrier();
  }
  if (l.y == 0u && col < u.D) { dw[col] = red[l.x]; }
}`,
);

/** x / sqrt(mean(x^2, -1) + eps) * w over the last axis of x, with its gradient. */
export function rmsNormWgsl(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor {
  const D = x.shape[x.shape.length - 1]!;
  const rows = x.size / D;
  const f = tf.customGrad(((xi: tf.Tensor, wi: tf.Tensor, save: tf.GradSaveFunc) => {
    save([xi, wi]);
    const [y] = runWgsl({
      kernel: forward,
      inputs: [xi, wi],
      outputs: [{ shape: xi.shape }],
      uniforms: { rows, D, eps },
      workgroups: grid(rows, 1),
    });
    return {
      value: y!,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [xs, ws] = saved as [tf.Tensor, tf.Tensor];
        const [dx, rstd] = runWgsl({
          kernel: backwardRows,
          inputs: [xs, ws, dy],
          outputs: [{ shape: xs.shape }, { shape: [rows] }],
          uniforms: { rows, D, eps },
          workgroups: grid(rows, 1),
        });
        const [dw] = runWgsl({
          kernel: backwardWeight,
          inputs: [xs, dy, rstd!],
          outputs: [{ shape: [D] }],
          uniforms: { rows, D },
          workgroups: [Math.ceil(D / 16)],
        });
        rstd!.dispose();
        return [dx!, dw!];
      },
    };
  }) as unknown as CustomGradFn);
  return f(x, w) as tf.Tensor;
}
