// The head's log-softmax at the target token (and the entropy when asked) of logits [n, V] as one
// dispatch, threads per row sized to the vocabulary, and its gradient as another: tfjs builds a
// log-softmax, a one-hot, a product and a sum (and as many again for the entropy) over the [n, V]
// logits, forward and back.
import * as tf from '@tensorflow/tfjs-core';
import { GROUP_INDEX, grid, runWgsl, type WgslKernel, wgslKernel } from './runner.js';

const WG = 256;
const BUILTINS =
  '@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32';

/**
 * Threads per row for a vocabulary of V: 8 to 16 logits each, from 32 to a whole workgroup (256). A
 * workgroup holds 256 / lanes rows. One workgroup per row left a 512-token row two logits a thread and
 * 16 barrier steps of reductions, which lost to tfjs's kernels at 16,384 rows (docs/performance.md).
 */
export function rowLanes(V: number): number {
  let lanes = 32;
  while (lanes < WG && lanes * 16 <= V) lanes *= 2;
  return lanes;
}

/**
 * WGSL: the row's max m, S = sum exp(z - m) and E = sum exp(z - m) z, as lse and the entropy H. One
 * pass over the row (each thread a running max, rescaling its sums when the max rises), then one
 * reduction of the (max, S, E) triples over the row's lanes in the shared arrays a, b, c.
 */
function rowStats(lanes: number): string {
  return `
  let lane = lid % ${lanes}u;
  let base = row * u.V;
  var m = -3.402823e38;
  var s = 0.0;
  var e = 0.0;
  if (rowOk) {
    for (var j = lane; j < u.V; j = j + ${lanes}u) {
      let zj = z[base + j];
      if (zj > m) { let r = exp(m - zj); s = s * r; e = e * r; m = zj; }
      let p = exp(zj - m);
      s = s + p;
      e = e + p * zj;
    }
  }
  a[lid] = m;
  b[lid] = s;
  c[lid] = e;
  workgroupBarrier();
  for (var k = ${lanes / 2}u; k > 0u; k = k >> 1u) {
    if (lane < k) {
      let m2 = a[lid + k];
      let mm = max(a[lid], m2);
      let r1 = exp(a[lid] - mm);
      let r2 = exp(m2 - mm);
      a[lid] = mm;
      b[lid] = b[lid] * r1 + b[lid + k] * r2;
      c[lid] = c[lid] * r1 + c[lid + k] * r2;
    }
    workgroupBarrier();
  }
  let first = lid - lane;
  let lse = a[first] + log(b[first]);
  let H = lse - c[first] / b[first];`;
}
const SHARED = `var<workgroup> a: array<f32, ${WG}>;\nvar<workgroup> b: array<f32, ${WG}>;\nvar<workgroup> c: array<f32, ${WG}>;`;
/** WGSL: this thread's row (rows of a workgroup one after another) and whether it exists. */
function rowOf(lanes: number): string {
  return `${GROUP_INDEX}
  let row = group * ${WG / lanes}u + lid / ${lanes}u;
  let rowOk = row < u.rows;`;
}

const cache = new Map<string, WgslKernel>();
function memo(key: string, make: () => WgslKernel): WgslKernel {
  let k = cache.get(key);
  if (!k) cache.set(key, (k = make()));
  return k;
}

function forwardKernel(entropy: boolean, lanes: number): WgslKernel {
  return memo(`f${entropy}/${lanes}`, () =>
    wgslKernel(
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
  ${rowOf(lanes)}
  ${rowStats(lanes)}
  if (rowOk && lane == 0u) {
    let tg = t[row];
    // A target outside the vocabulary has no log-prob: NaN, never a silent 0.
    if (tg < 0 || u32(tg) >= u.V) { lp[row] = bitcast<f32>(u.nanBits); } else { lp[row] = z[base + u32(tg)] - lse; }
    ${entropy ? 'ent[row] = H;' : ''}
  }
}`,
    ),
  );
}

// dz_j = scale (dlp (onehot_j - p_j) - dent p_j (log p_j + H)), p = softmax(z).
function backwardKernel(entropy: boolean, lanes: number): WgslKernel {
  return memo(`b${entropy}/${lanes}`, () =>
    wgslKernel(
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
  ${rowOf(lanes)}
  ${rowStats(lanes)}
  if (!rowOk) { return; }
  let tg = t[row];
  let d = dlp[row];
  let de = ${entropy ? 'dent[row]' : '0.0'};
  for (var j = lane; j < u.V; j = j + ${lanes}u) {
    let lpj = z[base + j] - lse;
    let p = exp(lpj);
    var g = -d * p - de * p * (lpj + H);
    if (i32(j) == tg) { g = g + d; }
    dz[base + j] = u.scale * g;
  }
}`,
    ),
  );
}

/** Every variant, for compileWgslKernels: with and without the entropy, forward and backward, at each lane count. */
export function allKernels(): WgslKernel[] {
  const out: WgslKernel[] = [];
  for (let lanes = 32; lanes <= WG; lanes *= 2)
    for (const ent of [false, true]) out.push(forwardKernel(ent, lanes), backwardKernel(ent, lanes));
  return out;
}

/** log softmax(z)[r, t_r] for z [n, V] and int32 targets [n], and the entropies when asked: [n] each. */
export function targetLogprobWgsl(
  z: tf.Tensor2D,
  targets: tf.Tensor1D,
  withEntropy: boolean,
): { logp: tf.Tensor1D; entropy?: tf.Tensor1D } {
  const [rows, V] = z.shape;
  const lanes = rowLanes(V);
  const t = int32(targets);
  const out = runWgsl({
    kernel: forwardKernel(withEntropy, lanes),
    inputs: [z, t],
    outputs: withEntropy ? [{ shape: [rows] }, { shape: [rows] }] : [{ shape: [rows] }],
    uniforms: { rows, V, nanBits: 0x7fc00000 },
    workgroups: grid(rows, WG / lanes),
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
  const lanes = rowLanes(V);
  const t = int32(targets);
  const inputs = dent ? [z, t, f32(dlp), f32(dent)] : [z, t, f32(dlp)];
  const [dz] = runWgsl({
    kernel: backwardKernel(dent !== undefined, lanes),
    inputs,
    outputs: [{ shape: [rows, V] }],
    uniforms: { rows, V, scale },
    workgroups: grid(rows, WG / lanes),
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
