// Causal self-attention with grouped-query heads as tiled kernels (flash-attention style): the
// forward pass streams key/value tiles through workgroup memory with an online softmax, so no
// [B, H, T, T] scores, bias or probabilities exist; the backward pass recomputes them tile by tile
// from the saved log-sum-exp. It works on the projections' [B, T, heads, hd] layout (no transposes,
// no repeated kv heads). Forward: 1 dispatch; backward: 3 (row statistics, dq, dk and dv), plus a sum
// over each kv head's query heads when there is more than one.
//
// Parallelism: a row (a query's, or a key's in dk/dv) keeps its vectors in one thread's registers, so
// one thread per row gives only B x H x T threads: 24,576 at large-100m 8 x 256, and 8,192 for dk/dv when
// they looped over a kv head's query heads in one thread. That filled a tenth of an H200 and made the
// fused attention slower than tfjs's matmuls there. Now `split` threads share a row, each taking every
// split-th key (or query) of a tile, and combine their partial sums in workgroup memory at the end; and
// dk/dv get a workgroup per query head. Vectors are vec4 where the head size allows: one workgroup load
// and one dot per four products. Tile rows are padded by one vector so the split threads of a row,
// reading neighbouring keys, hit different memory banks.
import * as tf from '@tensorflow/tfjs-core';
import { runWgsl, wgslKernel, workgroupStorageBytes } from './runner.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];
/** Threads per workgroup: rows x split. */
const THREADS = 64;
/** "No visible key" log-sum-exp: exp(s - NO_KEYS) is 0 for every score. */
const NO_KEYS = '3.0e38';
const NEG = '-3.0e38';
/** Split rows until there are this many threads (a large GPU holds ~100-300k resident threads). */
const TARGET_THREADS = 1 << 16;
const MAX_SPLIT = 4;
/** The splits chooseSplit picks from. */
export const SPLITS = [1, 2, 4];

/** How a kernel lays a head of size hd over threads and workgroup memory. */
export interface AttentionPlan {
  hd: number;
  /** Floats per vector: 4 where hd allows, else 1. */
  w: 1 | 4;
  /** WGSL type of a vector. */
  vt: string;
  /** Vectors per head row. */
  nv: number;
  /** Vectors per tile row in workgroup memory (nv + 1: the padding against bank conflicts). */
  stride: number;
  /** Threads per row. */
  split: number;
  /** Rows per workgroup. */
  rows: number;
  /** Keys (or queries) per tile. */
  tile: number;
  /** Vectors of the workgroup array: two tiles, or the combine area when that is larger. */
  shared: number;
}

/** The split for `rows` rows (B x H x T): the smallest that reaches TARGET_THREADS, at most MAX_SPLIT. */
export function chooseSplit(rows: number): number {
  let s = 1;
  while (s < MAX_SPLIT && rows * s < TARGET_THREADS) s *= 2;
  return s;
}

/**
 * The plan for head size hd at a given split, within the device's workgroup memory (`extraBytes`: the
 * kernel's other workgroup arrays). The tile is the largest power of two up to 32 that fits; a split
 * whose combine area does not fit is doubled.
 */
export function attentionPlan(
  hd: number,
  split: number,
  extraBytes: number,
  limit = workgroupStorageBytes(),
): AttentionPlan {
  const w: 1 | 4 = hd % 4 === 0 ? 4 : 1;
  const nv = hd / w;
  const stride = nv + 1;
  const bytes = (tile: number, s: number) =>
    Math.max(2 * tile * stride, s > 1 ? (THREADS / s) * nv : 0) * w * 4 + extraBytes;
  let s = split;
  while (s < THREADS && bytes(1, s) > limit) s *= 2;
  if (bytes(1, s) > limit)
    throw new Error(`attention: head size ${hd} does not fit ${limit} bytes of workgroup memory`);
  let tile = 32;
  while (tile > 1 && bytes(tile, s) > limit) tile /= 2;
  return {
    hd,
    w,
    vt: w === 4 ? 'vec4<f32>' : 'f32',
    nv,
    stride,
    split: s,
    rows: THREADS / s,
    tile,
    shared: Math.max(2 * tile * stride, s > 1 ? (THREADS / s) * nv : 0),
  };
}

// Each kernel's plan, with its other workgroup arrays: the forward's per-thread (max, sum) pairs, dk/dv's
// per-query statistics of a tile (at most 32 x 2 floats). The kernels and their grids both read these.
const forwardPlan = (hd: number, split: number) => attentionPlan(hd, split, THREADS * 2 * 4);
const dqPlan = (hd: number, split: number) => attentionPlan(hd, split, 0);
const dkvPlan = (hd: number, split: number) => attentionPlan(hd, split, 32 * 2 * 4);

const cache = new Map<string, ReturnType<typeof wgslKernel>>();
function memo(key: string, make: () => ReturnType<typeof wgslKernel>) {
  let k = cache.get(key);
  if (!k) cache.set(key, (k = make()));
  return k;
}
function planKey(p: AttentionPlan): string {
  return `${p.hd}/w${p.w}/s${p.split}/t${p.tile}`;
}

const DIMS: [string, 'u32' | 'f32'][] = [
  ['T', 'u32'],
  ['H', 'u32'],
  ['KV', 'u32'],
  ['rep', 'u32'],
  ['scale', 'f32'],
];

/** WGSL shared by the kernels: the vector dot product (vec4 or scalar). */
function dotFn(p: AttentionPlan): string {
  return `fn vdot(a: ${p.vt}, b: ${p.vt}) -> f32 { return ${p.w === 4 ? 'dot(a, b)' : 'a * b'}; }`;
}

/**
 * WGSL: the split threads of each row add their `acc` into workgroup memory in turn (row r at
 * sh[r * nv ...]), scaled by `f`; then thread s of the row calls `emit(c, value)` for vectors c = s,
 * s + split, ... All threads must reach it (it has barriers), after the last barrier of the tile loop.
 */
function combine(p: AttentionPlan, acc: string, f: string, emit: (c: string, value: string) => string): string {
  return `
  for (var t = 0u; t < ${p.split}u; t++) {
    if (s == t) {
      for (var c = 0u; c < ${p.nv}u; c++) {
        let x = ${acc}[c] * ${f};
        if (t == 0u) { sh[r * ${p.nv}u + c] = x; } else { sh[r * ${p.nv}u + c] += x; }
      }
    }
    workgroupBarrier();
  }
  for (var c = s; c < ${p.nv}u; c += ${p.split}u) { ${emit('c', `sh[r * ${p.nv}u + c]`)} }
  workgroupBarrier();`;
}

/**
 * WGSL: loads rows first.. first+tile of head `head` of two [B, T, heads, nv] arrays into sh (the first
 * at 0, times `scaleA`; the second after it), zeros past T.
 */
function loadTiles(
  p: AttentionPlan,
  a: string,
  b2: string,
  first: string,
  heads: string,
  head: string,
  scaleA = '',
): string {
  return `
    for (var e = lid; e < ${p.tile * p.nv}u; e += ${THREADS}u) {
      let jj = e / ${p.nv}u;
      let c = e % ${p.nv}u;
      let j = ${first} + jj;
      var x = ${p.vt}(0.0);
      var y = ${p.vt}(0.0);
      if (j < u.T) { let at = ((b * u.T + j) * ${heads} + ${head}) * ${p.nv}u + c; x = ${a}[at]${scaleA}; y = ${b2}[at]; }
      sh[jj * ${p.stride}u + c] = x;
      sh[${p.tile * p.stride}u + jj * ${p.stride}u + c] = y;
    }`;
}

export function forwardKernel(hd: number, split = 1) {
  const p = forwardPlan(hd, split);
  const ts = Math.ceil(p.tile / p.split);
  return memo(`f${planKey(p)}`, () =>
    wgslKernel(
      `attention_hd${hd}`,
      {
        inputs: [
          ['q', p.vt],
          ['k', p.vt],
          ['v', p.vt],
          ['mask', 'f32'],
        ],
        outputs: [
          ['o', p.vt],
          ['lse', 'f32'],
        ],
        uniforms: DIMS,
      },
      `
var<workgroup> sh: array<${p.vt}, ${p.shared}>;
var<workgroup> ml: array<f32, ${THREADS * 2}>;
${dotFn(p)}
@compute @workgroup_size(${THREADS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wid.z;
  let h = wid.y;
  let kvh = h / u.rep;
  let r = lid / ${p.split}u;
  let s = lid % ${p.split}u;
  let i = wid.x * ${p.rows}u + r;
  let rowOk = i < u.T;
  let qBase = ((b * u.T + i) * u.H + h) * ${p.nv}u;
  var qv: array<${p.vt}, ${p.nv}>;
  var acc: array<${p.vt}, ${p.nv}>;
  if (rowOk) { for (var c = 0u; c < ${p.nv}u; c++) { qv[c] = q[qBase + c] * u.scale; } }
  var m = ${NEG};
  var l = 0.0;
  let lastQ = min(wid.x * ${p.rows}u + ${p.rows - 1}u, u.T - 1u);
  for (var j0 = 0u; j0 <= lastQ; j0 += ${p.tile}u) {
    ${loadTiles(p, 'k', 'v', 'j0', 'u.KV', 'kvh')}
    workgroupBarrier();
    if (rowOk) {
      // This thread's keys of the tile: jj = s, s + split, ...
      var sc: array<f32, ${ts}>;
      var tmax = ${NEG};
      for (var t = 0u; t < ${ts}u; t++) {
        let jj = t * ${p.split}u + s;
        let j = j0 + jj;
        var sv = ${NEG};
        if (jj < ${p.tile}u && j <= i && mask[b * u.T + j] > 0.5) {
          sv = 0.0;
          for (var c = 0u; c < ${p.nv}u; c++) { sv += vdot(qv[c], sh[jj * ${p.stride}u + c]); }
        }
        sc[t] = sv;
        tmax = max(tmax, sv);
      }
      if (tmax > ${NEG}) {
        let mNew = max(m, tmax);
        let corr = exp(m - mNew);
        l = l * corr;
        for (var c = 0u; c < ${p.nv}u; c++) { acc[c] = acc[c] * corr; }
        for (var t = 0u; t < ${ts}u; t++) {
          if (sc[t] > ${NEG}) {
            let pj = exp(sc[t] - mNew);
            l += pj;
            let vb = ${p.tile * p.stride}u + (t * ${p.split}u + s) * ${p.stride}u;
            for (var c = 0u; c < ${p.nv}u; c++) { acc[c] += pj * sh[vb + c]; }
          }
        }
        m = mNew;
      }
    }
    workgroupBarrier();
  }
  // The row's softmax from its threads' partial ones: max M, sum L = sum_s l_s exp(m_s - M).
  ml[lid * 2u] = m;
  ml[lid * 2u + 1u] = l;
  workgroupBarrier();
  var M = ${NEG};
  for (var t = 0u; t < ${p.split}u; t++) { M = max(M, ml[(r * ${p.split}u + t) * 2u]); }
  var L = 0.0;
  for (var t = 0u; t < ${p.split}u; t++) {
    L += ml[(r * ${p.split}u + t) * 2u + 1u] * exp(ml[(r * ${p.split}u + t) * 2u] - M);
  }
  // A row with no visible key (left padding) is zero, as the native kernel makes it.
  var inv = 0.0;
  if (L > 0.0) { inv = 1.0 / L; }
  ${
    p.split === 1
      ? `if (rowOk) { for (var c = 0u; c < ${p.nv}u; c++) { o[qBase + c] = acc[c] * inv; } }`
      : combine(p, 'acc', 'exp(m - M)', (c, value) => `if (rowOk) { o[qBase + ${c}] = ${value} * inv; }`)
  }
  if (rowOk && s == 0u) {
    var ls = ${NO_KEYS};
    if (L > 0.0) { ls = M + log(L); }
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
export function dqKernel(hd: number, split = 1) {
  const p = dqPlan(hd, split);
  const ts = Math.ceil(p.tile / p.split);
  return memo(`q${planKey(p)}`, () =>
    wgslKernel(
      `attention_grad_q_hd${hd}`,
      {
        inputs: [
          ['q', p.vt],
          ['k', p.vt],
          ['v', p.vt],
          ['dO', p.vt],
          ['st', 'f32'],
          ['mask', 'f32'],
        ],
        outputs: [['dq', p.vt]],
        uniforms: DIMS,
      },
      `
var<workgroup> sh: array<${p.vt}, ${p.shared}>;
${dotFn(p)}
@compute @workgroup_size(${THREADS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wid.z;
  let h = wid.y;
  let kvh = h / u.rep;
  let r = lid / ${p.split}u;
  let s = lid % ${p.split}u;
  let i = wid.x * ${p.rows}u + r;
  let rowOk = i < u.T;
  let qBase = ((b * u.T + i) * u.H + h) * ${p.nv}u;
  var qv: array<${p.vt}, ${p.nv}>;
  var dov: array<${p.vt}, ${p.nv}>;
  var acc: array<${p.vt}, ${p.nv}>;
  var lse = ${NO_KEYS};
  var Di = 0.0;
  if (rowOk) {
    for (var c = 0u; c < ${p.nv}u; c++) { qv[c] = q[qBase + c] * u.scale; dov[c] = dO[qBase + c]; }
    let st0 = (b * u.H + h) * u.T + i;
    lse = st[st0 * 2u];
    Di = st[st0 * 2u + 1u];
  }
  let lastQ = min(wid.x * ${p.rows}u + ${p.rows - 1}u, u.T - 1u);
  for (var j0 = 0u; j0 <= lastQ; j0 += ${p.tile}u) {
    ${loadTiles(p, 'k', 'v', 'j0', 'u.KV', 'kvh')}
    workgroupBarrier();
    if (rowOk) {
      for (var t = 0u; t < ${ts}u; t++) {
        let jj = t * ${p.split}u + s;
        let j = j0 + jj;
        if (jj < ${p.tile}u && j <= i && mask[b * u.T + j] > 0.5) {
          let kb = jj * ${p.stride}u;
          let vb = ${p.tile * p.stride}u + kb;
          var sv = 0.0;
          var dp = 0.0;
          for (var c = 0u; c < ${p.nv}u; c++) { sv += vdot(qv[c], sh[kb + c]); dp += vdot(dov[c], sh[vb + c]); }
          let ds = exp(sv - lse) * (dp - Di);
          for (var c = 0u; c < ${p.nv}u; c++) { acc[c] += ds * sh[kb + c]; }
        }
      }
    }
    workgroupBarrier();
  }
  ${
    p.split === 1
      ? `if (rowOk) { for (var c = 0u; c < ${p.nv}u; c++) { dq[qBase + c] = acc[c] * u.scale; } }`
      : combine(p, 'acc', 'u.scale', (c, value) => `if (rowOk) { dq[qBase + ${c}] = ${value}; }`)
  }
}`,
    ),
  );
}

// For key j and query head h: dv_j = sum_i p_ij dO_i and dk_j = scale sum_i p_ij (dO_i . v_j - D_i) q_i
// over the queries i >= j; a workgroup per block of keys and query head (no atomics). Written as
// [B, T, H, hd]: with several query heads per kv head, the caller sums each kv head's.
export function dkvKernel(hd: number, split = 1) {
  const p = dkvPlan(hd, split);
  const ts = Math.ceil(p.tile / p.split);
  return memo(`kv${planKey(p)}`, () =>
    wgslKernel(
      `attention_grad_kv_hd${hd}`,
      {
        inputs: [
          ['q', p.vt],
          ['k', p.vt],
          ['v', p.vt],
          ['dO', p.vt],
          ['st', 'f32'],
          ['mask', 'f32'],
        ],
        outputs: [
          ['dk', p.vt],
          ['dv', p.vt],
        ],
        uniforms: DIMS,
      },
      `
var<workgroup> sh: array<${p.vt}, ${p.shared}>;
var<workgroup> Ss: array<f32, ${p.tile * 2}>;
${dotFn(p)}
@compute @workgroup_size(${THREADS})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let b = wid.z;
  let h = wid.y;
  let kvh = h / u.rep;
  let r = lid / ${p.split}u;
  let s = lid % ${p.split}u;
  let j = wid.x * ${p.rows}u + r;
  let keyOk = j < u.T && mask[b * u.T + min(j, u.T - 1u)] > 0.5;
  let kBase = ((b * u.T + j) * u.KV + kvh) * ${p.nv}u;
  var kv: array<${p.vt}, ${p.nv}>;
  var vv: array<${p.vt}, ${p.nv}>;
  var dkA: array<${p.vt}, ${p.nv}>;
  var dvA: array<${p.vt}, ${p.nv}>;
  if (keyOk) { for (var c = 0u; c < ${p.nv}u; c++) { kv[c] = k[kBase + c]; vv[c] = v[kBase + c]; } }
  for (var i0 = wid.x * ${p.rows}u; i0 < u.T; i0 += ${p.tile}u) {
    ${loadTiles(p, 'q', 'dO', 'i0', 'u.H', 'h', ' * u.scale')}
    for (var e = lid; e < ${p.tile * 2}u; e += ${THREADS}u) {
      let i = i0 + e / 2u;
      var sx = ${NO_KEYS};
      if (e % 2u == 1u) { sx = 0.0; }
      if (i < u.T) { sx = st[((b * u.H + h) * u.T + i) * 2u + e % 2u]; }
      Ss[e] = sx;
    }
    workgroupBarrier();
    if (keyOk) {
      // This thread's queries of the tile: ii = s, s + split, ...
      for (var t = 0u; t < ${ts}u; t++) {
        let ii = t * ${p.split}u + s;
        let i = i0 + ii;
        if (ii < ${p.tile}u && i < u.T && j <= i) {
          let qb = ii * ${p.stride}u;
          let ob = ${p.tile * p.stride}u + qb;
          var sv = 0.0;
          var dp = 0.0;
          for (var c = 0u; c < ${p.nv}u; c++) { sv += vdot(sh[qb + c], kv[c]); dp += vdot(sh[ob + c], vv[c]); }
          let pij = exp(sv - Ss[ii * 2u]);
          let ds = pij * (dp - Ss[ii * 2u + 1u]);
          for (var c = 0u; c < ${p.nv}u; c++) { dvA[c] += pij * sh[ob + c]; dkA[c] += ds * sh[qb + c]; }
        }
      }
    }
    workgroupBarrier();
  }
  let outBase = ((b * u.T + j) * u.H + h) * ${p.nv}u;
  ${
    p.split === 1
      ? `if (j < u.T) { for (var c = 0u; c < ${p.nv}u; c++) { dk[outBase + c] = dkA[c]; dv[outBase + c] = dvA[c]; } }`
      : `${combine(p, 'dkA', '1.0', (c, value) => `if (j < u.T) { dk[outBase + ${c}] = ${value}; }`)}
  ${combine(p, 'dvA', '1.0', (c, value) => `if (j < u.T) { dv[outBase + ${c}] = ${value}; }`)}`
  }
}`,
    ),
  );
}

/**
 * softmax(q k^T / sqrt(hd) + causal and key masks) v for q [B, T, H, hd], k and v [B, T, KV, hd]
 * (H a multiple of KV), keyMask [B, T] (1 real, 0 padding): [B, T, H, hd]. Rows with no visible key are
 * zero. `split` (threads per row; tests) defaults to chooseSplit for the shape.
 */
export function attentionWgsl(
  q: tf.Tensor4D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  keyMask: tf.Tensor2D,
  split?: number,
): tf.Tensor4D {
  const [B, T, H, hd] = q.shape;
  const KV = k.shape[2];
  if (H % KV !== 0) throw new Error(`attention: ${H} query heads are not a multiple of ${KV} kv heads`);
  const rep = H / KV;
  const dims = { T, H, KV, rep, scale: 1 / Math.sqrt(hd) };
  const s = split ?? chooseSplit(B * H * T);
  const blocks = (kernel: { rows: number }) => Math.ceil(T / kernel.rows);
  const mask = keyMask.dtype === 'float32' ? keyMask : tf.cast(keyMask, 'float32');
  const f = tf.customGrad(((qi: tf.Tensor, ki: tf.Tensor, vi: tf.Tensor, save: tf.GradSaveFunc) => {
    const [o, lse] = runWgsl({
      kernel: forwardKernel(hd, s),
      inputs: [qi, ki, vi, mask],
      outputs: [{ shape: [B, T, H, hd] }, { shape: [B, H, T] }],
      uniforms: dims,
      workgroups: [blocks(forwardPlan(hd, s)), H, B],
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
          kernel: dqKernel(hd, s),
          inputs: [qs!, ks!, vs!, dy, st!, ms!],
          outputs: [{ shape: [B, T, H, hd] }],
          uniforms: dims,
          workgroups: [blocks(dqPlan(hd, s)), H, B],
        });
        const [dkH, dvH] = runWgsl({
          kernel: dkvKernel(hd, s),
          inputs: [qs!, ks!, vs!, dy, st!, ms!],
          outputs: [{ shape: [B, T, H, hd] }, { shape: [B, T, H, hd] }],
          uniforms: dims,
          workgroups: [blocks(dkvPlan(hd, s)), H, B],
        });
        st!.dispose();
        if (rep === 1) return [dq!, dkH!, dvH!];
        // Query head h serves kv head h / rep: [B, T, KV, rep, hd] summed over rep.
        const perKv = (x: tf.Tensor) => tf.tidy(() => tf.sum(tf.reshape(x, [B, T, KV, rep, hd]), 3));
        const dk = perKv(dkH!);
        const dv = perKv(dvH!);
        tf.dispose([dkH!, dvH!]);
        return [dq!, dk, dv];
      },
    };
  }) as unknown as CustomGradFn);
  return f(q, k, v) as tf.Tensor4D;
}
