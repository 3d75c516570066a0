// Causal self-attention with grouped-query heads as tiled kernels (flash-attention style): the
// forward pass streams key/value tiles through workgroup memory with an online softmax, so no
// [B, H, T, T] scores, bias or probabilities exist; the backward pass recomputes them tile by tile
// from the saved log-sum-exp. It works on the projections' [B, T, heads, hd] layout (no transposes,
// no repeated kv heads). Forward: 1 dispatch; backward: 3 (row statistics, dq, dk and dv).
// One thread per query row (forward, dq) or key row (dk, dv) keeps that row's vectors in registers.
import * as tf from '@tensorflow/tfjs-core';
import { runWgsl, wgslKernel, workgroupStorageBytes } from './runner.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];
/** Rows (queries or keys) per workgroup, one per thread. */
const ROWS = 64;
/** "No visible key" log-sum-exp: exp(s - NO_KEYS) is 0 for every score. */
const NO_KEYS = '3.0e38';
const NEG = '-3.0e38';

/** Keys (or queries) per tile: a power of two up to 32 whose two [tile, hd] f32 tiles fit workgroup memory. */
function tileRows(hd: number, extra = 0): number {
  const limit = workgroupStorageBytes();
  let t = 32;
  while (t > 1 && 2 * t * hd * 4 + extra * t * 4 > limit) t /= 2;
  return t;
}

const cache = new Map<string, ReturnType<typeof wgslKernel>>();
function memo(key: string, make: () => ReturnType<typeof wgslKernel>) {
  let k = cache.get(key);
  if (!k) cache.set(key, (k = make()));
  return k;
}

const DIMS: [string, 'u32' | 'f32'][] = [
  ['T', 'u32'],
  ['H', 'u32'],
  ['KV', 'u32'],
  ['rep', 'u32'],
  ['scale', 'f32'],
];

export function forwardKernel(hd: number) {
  const bk = tileRows(hd);
  return memo(`f${hd}/${bk}`, () =>
    wgslKernel(
      `attention_hd${hd}`,
      {
        inputs: [
          ['q', 'f32'],
          ['k', 'f32'],
          ['v', 'f32'],
          ['mask', 'f32'],
        ],
        outputs: [
          ['o', 'f32'],
          ['lse', 'f32'],
        ],
        uniforms: DIMS,
      },
      `
var<workgroup> Ks: array<f32, ${bk * hd}>;
var<workgroup> Vs: array<f32, ${bk * hd}>;
@compute @workgroup_size(${ROWS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wid.z;
  let h = wid.y;
  let kvh = h / u.rep;
  let i = wid.x * ${ROWS}u + lid;
  let rowOk = i < u.T;
  let qBase = ((b * u.T + i) * u.H + h) * ${hd}u;
  var qv: array<f32, ${hd}>;
  var acc: array<f32, ${hd}>;
  if (rowOk) { for (var d = 0u; d < ${hd}u; d++) { qv[d] = q[qBase + d] * u.scale; } }
  var m = ${NEG};
  var l = 0.0;
  let lastQ = min(wid.x * ${ROWS}u + ${ROWS - 1}u, u.T - 1u);
  for (var j0 = 0u; j0 <= lastQ; j0 += ${bk}u) {
    for (var e = lid; e < ${bk * hd}u; e += ${ROWS}u) {
      let j = j0 + e / ${hd}u;
      var kx = 0.0;
      var vx = 0.0;
      if (j < u.T) { let kb = ((b * u.T + j) * u.KV + kvh) * ${hd}u + e % ${hd}u; kx = k[kb]; vx = v[kb]; }
      Ks[e] = kx;
      Vs[e] = vx;
    }
    workgroupBarrier();
    if (rowOk) {
      var sc: array<f32, ${bk}>;
      var tmax = ${NEG};
      for (var jj = 0u; jj < ${bk}u; jj++) {
        let j = j0 + jj;
        var s = ${NEG};
        if (j <= i && mask[b * u.T + j] > 0.5) {
          s = 0.0;
          for (var d = 0u; d < ${hd}u; d++) { s += qv[d] * Ks[jj * ${hd}u + d]; }
        }
        sc[jj] = s;
        tmax = max(tmax, s);
      }
      if (tmax > ${NEG}) {
        let mNew = max(m, tmax);
        let corr = exp(m - mNew);
        l = l * corr;
        for (var d = 0u; d < ${hd}u; d++) { acc[d] = acc[d] * corr; }
        for (var jj = 0u; jj < ${bk}u; jj++) {
          if (sc[jj] > ${NEG}) {
            let p = exp(sc[jj] - mNew);
            l += p;
            for (var d = 0u; d < ${hd}u; d++) { acc[d] += p * Vs[jj * ${hd}u + d]; }
          }
        }
        m = mNew;
      }
    }
    workgroupBarrier();
  }
  if (rowOk) {
    // A row with no visible key (left padding) is zero, as the native kernel makes it.
    var inv = 0.0;
    if (l > 0.0) { inv = 1.0 / l; }
    for (var d = 0u; d < ${hd}u; d++) { o[qBase + d] = acc[d] * inv; }
    var ls = ${NO_KEYS};
    if (l > 0.0) { ls = m + log(l); }
    lse[(b * u.H + h) * u.T + i] = ls;
  }
}`,
    ),
  );
}

// Per query row: its log-sum-exp and D = dO . O, packed [B, H, T, 2] for the two gradient kernels.
export function statsKernel(hd: number) {
  return memo(`s${hd}`, () =>
    wgslKernel(
      `attention_grad_stats_hd${hd}`,
      {
        inputs: [
          ['o', 'f32'],
          ['dO', 'f32'],
          ['lse', 'f32'],
        ],
        outputs: [['st', 'f32']],
        uniforms: [
          ['n', 'u32'],
          ['T', 'u32'],
          ['H', 'u32'],
        ],
      },
      `
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let r = gid.x; // (b, h, i) flattened as [B, H, T]
  if (r >= u.n) { return; }
  let i = r % u.T;
  let h = (r / u.T) % u.H;
  let b = r / (u.T * u.H);
  let base = ((b * u.T + i) * u.H + h) * ${hd}u;
  var s = 0.0;
  for (var d = 0u; d < ${hd}u; d++) { s += dO[base + d] * o[base + d]; }
  st[r * 2u] = lse[r];
  st[r * 2u + 1u] = s;
}`,
    ),
  );
}

// dq_i = scale sum_j p_ij (dO_i . v_j - D_i) k_j over the keys visible to query i.
export function dqKernel(hd: number) {
  const bk = tileRows(hd);
  return memo(`q${hd}/${bk}`, () =>
    wgslKernel(
      `attention_grad_q_hd${hd}`,
      {
        inputs: [
          ['q', 'f32'],
          ['k', 'f32'],
          ['v', 'f32'],
          ['dO', 'f32'],
          ['st', 'f32'],
          ['mask', 'f32'],
        ],
        outputs: [['dq', 'f32']],
        uniforms: DIMS,
      },
      `
var<workgroup> Ks: array<f32, ${bk * hd}>;
var<workgroup> Vs: array<f32, ${bk * hd}>;
@compute @workgroup_size(${ROWS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wid.z;
  let h = wid.y;
  let kvh = h / u.rep;
  let i = wid.x * ${ROWS}u + lid;
  let rowOk = i < u.T;
  let qBase = ((b * u.T + i) * u.H + h) * ${hd}u;
  var qv: array<f32, ${hd}>;
  var dov: array<f32, ${hd}>;
  var acc: array<f32, ${hd}>;
  var lse = ${NO_KEYS};
  var Di = 0.0;
  if (rowOk) {
    for (var d = 0u; d < ${hd}u; d++) { qv[d] = q[qBase + d] * u.scale; dov[d] = dO[qBase + d]; }
    let r = (b * u.H + h) * u.T + i;
    lse = st[r * 2u];
    Di = st[r * 2u + 1u];
  }
  let lastQ = min(wid.x * ${ROWS}u + ${ROWS - 1}u, u.T - 1u);
  for (var j0 = 0u; j0 <= lastQ; j0 += ${bk}u) {
    for (var e = lid; e < ${bk * hd}u; e += ${ROWS}u) {
      let j = j0 + e / ${hd}u;
      var kx = 0.0;
      var vx = 0.0;
      if (j < u.T) { let kb = ((b * u.T + j) * u.KV + kvh) * ${hd}u + e % ${hd}u; kx = k[kb]; vx = v[kb]; }
      Ks[e] = kx;
      Vs[e] = vx;
    }
    workgroupBarrier();
    if (rowOk) {
      for (var jj = 0u; jj < ${bk}u; jj++) {
        let j = j0 + jj;
        if (j <= i && mask[b * u.T + j] > 0.5) {
          var s = 0.0;
          var dp = 0.0;
          for (var d = 0u; d < ${hd}u; d++) { s += qv[d] * Ks[jj * ${hd}u + d]; dp += dov[d] * Vs[jj * ${hd}u + d]; }
          let ds = exp(s - lse) * (dp - Di);
          for (var d = 0u; d < ${hd}u; d++) { acc[d] += ds * Ks[jj * ${hd}u + d]; }
        }
      }
    }
    workgroupBarrier();
  }
  if (rowOk) { for (var d = 0u; d < ${hd}u; d++) { dq[qBase + d] = acc[d] * u.scale; } }
}`,
    ),
  );
}

// For key j of kv head g: dv_j = sum p_ij dO_i and dk_j = scale sum p_ij (dO_i . v_j - D_i) q_i over
// the query heads g serves and the queries i >= j; a workgroup per block of keys (no atomics).
export function dkvKernel(hd: number) {
  const bq = tileRows(hd, 2);
  return memo(`kv${hd}/${bq}`, () =>
    wgslKernel(
      `attention_grad_kv_hd${hd}`,
      {
        inputs: [
          ['q', 'f32'],
          ['k', 'f32'],
          ['v', 'f32'],
          ['dO', 'f32'],
          ['st', 'f32'],
          ['mask', 'f32'],
        ],
        outputs: [
          ['dk', 'f32'],
          ['dv', 'f32'],
        ],
        uniforms: DIMS,
      },
      `
var<workgroup> Qs: array<f32, ${bq * hd}>;
var<workgroup> Os: array<f32, ${bq * hd}>;
var<workgroup> Ss: array<f32, ${bq * 2}>;
@compute @workgroup_size(${ROWS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wid.z;
  let kvh = wid.y;
  let j = wid.x * ${ROWS}u + lid;
  let keyOk = j < u.T && mask[b * u.T + min(j, u.T - 1u)] > 0.5;
  let kBase = ((b * u.T + j) * u.KV + kvh) * ${hd}u;
  var kv: array<f32, ${hd}>;
  var vv: array<f32, ${hd}>;
  var dkA: array<f32, ${hd}>;
  var dvA: array<f32, ${hd}>;
  if (keyOk) { for (var d = 0u; d < ${hd}u; d++) { kv[d] = k[kBase + d]; vv[d] = v[kBase + d]; } }
  let firstQ = wid.x * ${ROWS}u;
  for (var g = 0u; g < u.rep; g++) {
    let h = kvh * u.rep + g;
    for (var i0 = firstQ; i0 < u.T; i0 += ${bq}u) {
      for (var e = lid; e < ${bq * hd}u; e += ${ROWS}u) {
        let i = i0 + e / ${hd}u;
        var qx = 0.0;
        var ox = 0.0;
        if (i < u.T) { let qb = ((b * u.T + i) * u.H + h) * ${hd}u + e % ${hd}u; qx = q[qb] * u.scale; ox = dO[qb]; }
        Qs[e] = qx;
        Os[e] = ox;
      }
      for (var e = lid; e < ${bq * 2}u; e += ${ROWS}u) {
        let i = i0 + e / 2u;
        var sx = ${NO_KEYS};
        if (e % 2u == 1u) { sx = 0.0; }
        if (i < u.T) { sx = st[((b * u.H + h) * u.T + i) * 2u + e % 2u]; }
        Ss[e] = sx;
      }
      workgroupBarrier();
      if (keyOk) {
        for (var ii = 0u; ii < ${bq}u; ii++) {
          let i = i0 + ii;
          if (i < u.T && j <= i) {
            var s = 0.0;
            var dp = 0.0;
            for (var d = 0u; d < ${hd}u; d++) { s += Qs[ii * ${hd}u + d] * kv[d]; dp += Os[ii * ${hd}u + d] * vv[d]; }
            let p = exp(s - Ss[ii * 2u]);
            let ds = p * (dp - Ss[ii * 2u + 1u]);
            for (var d = 0u; d < ${hd}u; d++) { dvA[d] += p * Os[ii * ${hd}u + d]; dkA[d] += ds * Qs[ii * ${hd}u + d]; }
          }
        }
      }
      workgroupBarrier();
    }
  }
  if (j < u.T) { for (var d = 0u; d < ${hd}u; d++) { dk[kBase + d] = dkA[d]; dv[kBase + d] = dvA[d]; } }
}`,
    ),
  );
}

/**
 * softmax(q k^T / sqrt(hd) + causal and key masks) v for q [B, T, H, hd], k and v [B, T, KV, hd]
 * (H a multiple of KV), keyMask [B, T] (1 real, 0 padding): [B, T, H, hd]. Rows with no visible key are zero.
 */
export function attentionWgsl(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, keyMask: tf.Tensor2D): tf.Tensor4D {
  const [B, T, H, hd] = q.shape;
  const KV = k.shape[2];
  if (H % KV !== 0) throw new Error(`attention: ${H} query heads are not a multiple of ${KV} kv heads`);
  const dims = { T, H, KV, rep: H / KV, scale: 1 / Math.sqrt(hd) };
  const mask = keyMask.dtype === 'float32' ? keyMask : tf.cast(keyMask, 'float32');
  const f = tf.customGrad(((qi: tf.Tensor, ki: tf.Tensor, vi: tf.Tensor, save: tf.GradSaveFunc) => {
    const [o, lse] = runWgsl({
      kernel: forwardKernel(hd),
      inputs: [qi, ki, vi, mask],
      outputs: [{ shape: [B, T, H, hd] }, { shape: [B, H, T] }],
      uniforms: dims,
      workgroups: [Math.ceil(T / ROWS), H, B],
    });
    // The mask too: a closure's tensor made in the forward pass is disposed before the backward pass.
    save([qi, ki, vi, o!, lse!, mask]);
    return {
      value: o!,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [qs, ks, vs, os, ls, ms] = saved as tf.Tensor[];
        const n = B * H * T;
        const [st] = runWgsl({
          kernel: statsKernel(hd),
          inputs: [os!, dy, ls!],
          outputs: [{ shape: [B, H, T, 2] }],
          uniforms: { n, T, H },
          workgroups: [Math.ceil(n / 64)],
        });
        const [dq] = runWgsl({
          kernel: dqKernel(hd),
          inputs: [qs!, ks!, vs!, dy, st!, ms!],
          outputs: [{ shape: [B, T, H, hd] }],
          uniforms: dims,
          workgroups: [Math.ceil(T / ROWS), H, B],
        });
        const [dk, dv] = runWgsl({
          kernel: dkvKernel(hd),
          inputs: [qs!, ks!, vs!, dy, st!, ms!],
          outputs: [{ shape: [B, T, KV, hd] }, { shape: [B, T, KV, hd] }],
          uniforms: dims,
          workgroups: [Math.ceil(T / ROWS), KV, B],
        });
        st!.dispose();
        return [dq!, dk!, dv!];
      },
    };
  }) as unknown as CustomGradFn);
  return f(q, k, v) as tf.Tensor4D;
}
