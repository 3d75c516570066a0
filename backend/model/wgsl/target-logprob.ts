// The head's log-softmax at the target token (and the entropy when asked) of logits [n, V] as one
// dispatch, a workgroup per row, and its gradient as another: tfjs builds a log-softmax, a one-hot,
// a product and a sum (and as many again for the entropy) over the [n, V] logits, forward and back.
import * as tf from '@tensorflow/tfjs-core';
import { GROUP_INDEX, grid, runWgsl, wgslKernel } from './runner.js';

const WG = 256;
const BUILTINS =
  '@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32';

/** WGSL: the row's max m, S = sum exp(z - m) and E = sum exp(z - m) z (shared arrays a, b, c). */
const ROW_STATS = `
  let base = group * u.V;
  var mx = -3.402823e38;
  for (var j = lid; j < u.V; j = j + ${WG}u) { mx = max(mx, z[base + j]); }
  a[lid] = mx;
  workgroupBarrier();
  for (var k = ${WG / 2}u; k > 0u; k = k >> 1u) {
    if (lid < k) { a[lid] = max(a[lid], a[lid + k]); }
    workgroupBarrier();
  }
  let m = a[0];
  var s = 0.0;
  var e = 0.0;
  for (var j = lid; j < u.V; j = j + ${WG}u) { let zj = z[base + j]; let p = exp(zj - m); s = s + p; e = e + p * zj; }
  b[lid] = s;
  c[lid] = e;
  workgroupBarrier();
  for (var k = ${WG / 2}u; k > 0u; k = k >> 1u) {
    if (lid < k) { b[lid] = b[lid] + b[lid + k]; c[lid] = c[lid] + c[lid + k]; }
    workgroupBarrier();
  }
  let lse = m + log(b[0]);
  let H = lse - c[0] / b[0];`;
const SHARED = `var<workgroup> a: array<f32, ${WG}>;\nvar<workgroup> b: array<f32, ${WG}>;\nvar<workgroup> c: array<f32, ${WG}>;`;

function forwardKernel(entropy: boolean) {
  return wgslKernel(
    entropy ? 'target_logprob_entropy' : 'target_logprob',
    {
      inputs: [
        ['z', 'f32'],
        ['t', 'i32'],
      ],
      outputs: entropy
        ? [
            ['lp', 'f32'],
            ['ent', 'f32'],
          ]
        : [['lp', 'f32']],
      uniforms: [
        ['rows', 'u32'],
        ['V', 'u32'],
        ['nanBits', 'u32'],
      ],
    },
    `
${SHARED}
@compute @workgroup_size(${WG})
fn main(${BUILTINS}) {
  ${GROUP_INDEX}
  if (group >= u.rows) { return; }
  ${ROW_STATS}
  if (lid == 0u) {
    let tg = t[group];
    // A target outside the vocabulary has no log-prob: NaN, never a silent 0.
    if (tg < 0 || u32(tg) >= u.V) { lp[group] = bitcast<f32>(u.nanBits); } else { lp[group] = z[base + u32(tg)] - lse; }
    ${entropy ? 'ent[group] = H;' : ''}
  }
}`,
  );
}

// dz_j = scale (dlp (onehot_j - p_j) - dent p_j (log p_j + H)), p = softmax(z).
function backwardKernel(entropy: boolean) {
  return wgslKernel(
    entropy ? 'target_logprob_entropy_grad' : 'target_logprob_grad',
    {
      inputs: entropy
        ? [
            ['z', 'f32'],
            ['t', 'i32'],
            ['dlp', 'f32'],
            ['dent', 'f32'],
          ]
        : [
            ['z', 'f32'],
            ['t', 'i32'],
            ['dlp', 'f32'],
          ],
      outputs: [['dz', 'f32']],
      uniforms: [
        ['rows', 'u32'],
        ['V', 'u32'],
        ['scale', 'f32'],
      ],
    },
    `
${SHARED}
@compute @workgroup_size(${WG})
fn main(${BUILTINS}) {
  ${GROUP_INDEX}
  if (group >= u.rows) { return; }
  ${ROW_STATS}
  let tg = t[group];
  let d = dlp[group];
  let de = ${entropy ? 'dent[group]' : '0.0'};
  for (var j = lid; j < u.V; j = j + ${WG}u) {
    let lpj = z[base + j] - lse;
    let p = exp(lpj);
    var g = -d * p - de * p * (lpj + H);
    if (i32(j) == tg) { g = g + d; }
    dz[base + j] = u.scale * g;
  }
}`,
  );
}

export const KERNELS = {
  fwd: forwardKernel(false),
  fwdEnt: forwardKernel(true),
  bwd: backwardKernel(false),
  bwdEnt: backwardKernel(true),
};

/** log softmax(z)[r, t_r] for z [n, V] and int32 targets [n], and the entropies when asked: [n] each. */
export function targetLogprobWgsl(
  z: tf.Tensor2D,
  targets: tf.Tensor1D,
  withEntropy: boolean,
): { logp: tf.Tensor1D; entropy?: tf.Tensor1D } {
  const [rows, V] = z.shape;
  const t = int32(targets);
  const out = runWgsl({
    kernel: withEntropy ? KERNELS.fwdEnt : KERNELS.fwd,
    inputs: [z, t],
    outputs: withEntropy ? [{ shape: [rows] }, { shape: [rows] }] : [{ shape: [rows] }],
    uniforms: { rows, V, nanBits: 0x7fc00000 },
    workgroups: grid(rows, 1),
  });
  if (t !== targets) t.dispose();
  return withEntropy
    ? { logp: out[0] as tf.Tensor1D, entropy: out[1] as tf.Tensor1D }
    : { logp: out[0] as tf.Tensor1D };
}

/** The gradient in z of dlp . logp (+ dent . entropy), times `scale` (1 / temperature): [n, V]. */
export function targetLogprobGradWgsl(
  z: tf.Tensor2D,
  targets: tf.Tensor1D,
  dlp: tf.Tensor1D,
  dent: tf.Tensor1D | undefined,
  scale: number,
): tf.Tensor2D {
  const [rows, V] = z.shape;
  const t = int32(targets);
  const inputs = dent ? [z, t, f32(dlp), f32(dent)] : [z, t, f32(dlp)];
  const [dz] = runWgsl({
    kernel: dent ? KERNELS.bwdEnt : KERNELS.bwd,
    inputs,
    outputs: [{ shape: [rows, V] }],
    uniforms: { rows, V, scale },
    workgroups: grid(rows, 1),
  });
  for (const x of inputs) if (x !== z && x !== targets && x !== dlp && x !== dent) x.dispose();
  return dz as tf.Tensor2D;
}

function int32(t: tf.Tensor1D): tf.Tensor1D {
  return t.dtype === 'int32' ? t : (tf.cast(t, 'int32') as tf.Tensor1D);
}
function f32(t: tf.Tensor1D): tf.Tensor1D {
  return t.dtype === 'float32' ? t : (tf.cast(t, 'float32') as tf.Tensor1D);
}
