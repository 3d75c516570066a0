// The WGSL kernels of one KV-cache decode step (webgpu-decode.ts runs them): a step of B sequences, one
// new token each, is five dispatches a layer instead of tfjs's ~35 (unfused attention, Concat-grown
// cache, Tile for GQA, separate norm/bias/residual kernels):
//   linear(norm, q|k|v, bias)  ->  attention(q/k norm, RoPE, cache write, softmax over the cache)
//   ->  linear(o, + residual)  ->  linear(norm, gate|up, SwiGLU)  ->  linear(down, + residual)
// then the final norm, the head, and the sampling (temperature, inverse CDF) on the GPU, so a step
// reads back 2 x B numbers (token, log-prob), not B x vocabulary logits.
// Row-major layouts as the model keeps them: linear weights [in, out], the tied table [vocab, dModel],
// the cache [B, kvHeads, maxT, headDim], the key mask [B, maxT] (1 real, 0 left padding).
import { wgslKernel, type WgslKernel } from './runner.js';

/** Batch rows one linear workgroup computes (its accumulators are registers: ROWS per output column). */
const ROWS = 8;
/** Output columns per linear workgroup, and threads splitting the reduction over the input dimension. */
const COLS = 32;
const KSPLIT = 8;
const LINEAR_WG = COLS * KSPLIT;

export interface LinearVariant {
  /** RMSNorm of the input rows first (input `g`, uniform `eps`): the layer norms before q|k|v and gate|up. */
  norm: boolean;
  /** Weights whose outputs are laid side by side (q|k|v: 3; gate|up with swiglu: 2). */
  weights: 1 | 2 | 3;
  /** One bias over all the columns (Qwen2's q|k|v biases, concatenated). */
  bias: boolean;
  /** out = res + x W (the residual stream). */
  residual: boolean;
  /** Two weights gate and up: out = silu(x Wg) * (x Wu), N columns. */
  swiglu: boolean;
}

const linearCache = new Map<string, WgslKernel>();

/**
 * out[b, c] = (res[b, c] +) sum_d xn[b, d] W[d, c] (+ bias[c]), xn = x (or RMSNorm(x) * g), for the
 * columns of up to three weights side by side. A workgroup: COLS columns x ROWS rows, its KSPLIT
 * thread groups each summing every KSPLIT-th input dimension, then reduced in workgroup memory.
 */
export function linearKernel(v: LinearVariant): WgslKernel {
  const key = JSON.stringify(v);
  const hit = linearCache.get(key);
  if (hit) return hit;
  const ws = v.swiglu ? ['wg', 'wu'] : ['w0', 'w1', 'w2'].slice(0, v.weights);
  const inputs: [string, string][] = [['x', 'f32']];
  if (v.norm) inputs.push(['g', 'f32']);
  for (const w of ws) inputs.push([w, 'f32']);
  if (v.bias) inputs.push(['bias', 'f32']);
  if (v.residual) inputs.push(['res', 'f32']);
  const accs = v.swiglu ? ['acc0', 'acc1'] : ['acc0'];
  // The inner loop over this thread's share of d, for weight `w` with `n` columns at column `col`.
  const loop = (w: string, n: string, col: string, acc: string) => `
    for (var d = ks; d < u.D; d += ${KSPLIT}u) {
      let wv = ${w}[d * ${n} + ${col}];
      ${v.norm ? 'let gd = g[d];' : ''}
      for (var r = 0u; r < nr; r++) { ${acc}[r] += x[(r0 + r) * u.D + d]${v.norm ? ' * gd' : ''} * wv; }
    }`;
  let body: string;
  if (v.swiglu) body = `if (c < u.N0) { ${loop('wg', 'u.N0', 'c', 'acc0')} ${loop('wu', 'u.N0', 'c', 'acc1')} }`;
  else if (v.weights === 1) body = `if (c < u.N0) { ${loop('w0', 'u.N0', 'c', 'acc0')} }`;
  else
    body = `if (c < u.N0) { ${loop('w0', 'u.N0', 'c', 'acc0')} }
    else if (c < u.N0 + u.N1) { ${loop('w1', 'u.N1', 'c - u.N0', 'acc0')} }
    ${v.weights === 3 ? `else if (c < u.N0 + u.N1 + u.N2) { ${loop('w2', 'u.N2', 'c - u.N0 - u.N1', 'acc0')} }` : ''}`;
  const ntot = v.swiglu ? 'u.N0' : v.weights === 1 ? 'u.N0' : v.weights === 2 ? 'u.N0 + u.N1' : 'u.N0 + u.N1 + u.N2';
  // Per-thread partial sums -> red[r][ks][col] -> the ks == 0 thread of each column adds them up.
  const reduce = (acc: string, into: string) => `
  for (var r = 0u; r < ${ROWS}u; r++) { red[(r * ${KSPLIT}u + ks) * ${COLS}u + cl] = ${acc}[r]; }
  workgroupBarrier();
  if (ks == 0u) {
    for (var r = 0u; r < ${ROWS}u; r++) {
      var s = 0.0;
      for (var k = 0u; k < ${KSPLIT}u; k++) { s += red[(r * ${KSPLIT}u + k) * ${COLS}u + cl]; }
      ${into}[r] = s;
    }
  }
  workgroupBarrier();`;
  const k = wgslKernel(
    `decode_linear${v.norm ? '_norm' : ''}${v.swiglu ? '_swiglu' : `_${v.weights}w`}${v.bias ? '_bias' : ''}${v.residual ? '_res' : ''}`,
    {
      inputs,
      outputs: [['out', 'f32']],
      uniforms: [
        ['B', 'u32'],
        ['D', 'u32'],
        ['N0', 'u32'],
        ['N1', 'u32'],
        ['N2', 'u32'],
        ['eps', 'f32'],
      ],
    },
    `
var<workgroup> red: array<f32, ${ROWS * KSPLIT * COLS}>;
var<workgroup> inv: array<f32, ${ROWS}>;
@compute @workgroup_size(${LINEAR_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let cl = li % ${COLS}u;
  let ks = li / ${COLS}u;
  let c = wid.x * ${COLS}u + cl;
  let r0 = wid.y * ${ROWS}u;
  let nr = min(${ROWS}u, u.B - r0);
  ${
    v.norm
      ? `// 1 / rms of each of the workgroup's rows, every thread summing a stride of d.
  for (var r = 0u; r < ${ROWS}u; r++) {
    var s = 0.0;
    if (r < nr) { for (var d = li; d < u.D; d += ${LINEAR_WG}u) { let xv = x[(r0 + r) * u.D + d]; s += xv * xv; } }
    red[r * ${LINEAR_WG}u + li] = s;
  }
  workgroupBarrier();
  if (li < ${ROWS}u) {
    var s = 0.0;
    for (var k = 0u; k < ${LINEAR_WG}u; k++) { s += red[li * ${LINEAR_WG}u + k]; }
    inv[li] = inverseSqrt(s / f32(u.D) + u.eps);
  }
  workgroupBarrier();`
      : ''
  }
  ${accs.map((a) => `var ${a}: array<f32, ${ROWS}>;`).join('\n  ')}
  ${body}
  var sum0: array<f32, ${ROWS}>;
  ${reduce('acc0', 'sum0')}
  ${v.swiglu ? `var sum1: array<f32, ${ROWS}>;\n  ${reduce('acc1', 'sum1')}` : ''}
  if (ks != 0u || c >= ${ntot}) { return; }
  for (var r = 0u; r < nr; r++) {
    let row = r0 + r;
    ${
      v.swiglu
        ? `let gv = sum0[r]${v.norm ? ' * inv[r]' : ''}; let uv = sum1[r]${v.norm ? ' * inv[r]' : ''};
    out[row * u.N0 + c] = gv / (1.0 + exp(-gv)) * uv;`
        : `var y = sum0[r]${v.norm ? ' * inv[r]' : ''};
    ${v.bias ? 'y += bias[c];' : ''}
    ${v.residual ? `y += res[row * (${ntot}) + c];` : ''}
    out[row * (${ntot}) + c] = y;`
    }
  }
}`,
  );
  linearCache.set(key, k);
  return k;
}

/** Workgroups of a linear dispatch: column tiles x row groups. */
export function linearGrid(B: number, N: number): [number, number] {
  return [Math.ceil(N / COLS), Math.ceil(B / ROWS)];
}

/** Vocabulary rows per head workgroup, and threads splitting each row's reduction over dModel. */
const HEAD_ROWS = 8;
const HEAD_SPLIT = 32;

/**
 * The tied head: out[b, n] = sum_d h[b, d] T[n, d] with the table [vocab, dModel] as stored (no
 * transposed copy: that would be another vocab x dModel matrix). A workgroup: HEAD_ROWS vocabulary
 * rows, HEAD_SPLIT threads each, reading the table row coalesced, for ROWS batch rows.
 */
export const headTiedKernel = wgslKernel(
  'decode_head_tied',
  {
    inputs: [
      ['h', 'f32'],
      ['table', 'f32'],
    ],
    outputs: [['out', 'f32']],
    uniforms: [
      ['B', 'u32'],
      ['D', 'u32'],
      ['V', 'u32'],
    ],
  },
  `
var<workgroup> red: array<f32, ${ROWS * HEAD_ROWS * HEAD_SPLIT}>;
@compute @workgroup_size(${HEAD_ROWS * HEAD_SPLIT})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let j = li % ${HEAD_SPLIT}u;
  let nl = li / ${HEAD_SPLIT}u;
  let n = wid.x * ${HEAD_ROWS}u + nl;
  let r0 = wid.y * ${ROWS}u;
  let nr = min(${ROWS}u, u.B - r0);
  var acc: array<f32, ${ROWS}>;
  if (n < u.V) {
    for (var d = j; d < u.D; d += ${HEAD_SPLIT}u) {
      let wv = table[n * u.D + d];
      for (var r = 0u; r < nr; r++) { acc[r] += h[(r0 + r) * u.D + d] * wv; }
    }
  }
  for (var r = 0u; r < ${ROWS}u; r++) { red[(r * ${HEAD_ROWS}u + nl) * ${HEAD_SPLIT}u + j] = acc[r]; }
  workgroupBarrier();
  if (j != 0u || n >= u.V) { return; }
  for (var r = 0u; r < nr; r++) {
    var s = 0.0;
    for (var k = 0u; k < ${HEAD_SPLIT}u; k++) { s += red[(r * ${HEAD_ROWS}u + nl) * ${HEAD_SPLIT}u + k]; }
    out[(r0 + r) * u.V + n] = s;
  }
}`,
);

export function headTiedGrid(B: number, V: number): [number, number] {
  return [Math.ceil(V / HEAD_ROWS), Math.ceil(B / ROWS)];
}

const ROW_WG = 256;

/** The embedding of B token ids: x[b, :] = table[ids[b], :]. One workgroup per row. */
export const embedKernel = wgslKernel(
  'decode_embed',
  {
    inputs: [
      ['ids', 'i32'],
      ['table', 'f32'],
    ],
    outputs: [['x', 'f32']],
    uniforms: [['D', 'u32']],
  },
  `
@compute @workgroup_size(${ROW_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let b = wid.x;
  let id = u32(ids[b]);
  for (var d = li; d < u.D; d += ${ROW_WG}u) { x[b * u.D + d] = table[id * u.D + d]; }
}`,
);

/** RMSNorm of B rows (the final norm, before the head). One workgroup per row. */
export const normKernel = wgslKernel(
  'decode_norm',
  {
    inputs: [
      ['x', 'f32'],
      ['g', 'f32'],
    ],
    outputs: [['y', 'f32']],
    uniforms: [
      ['D', 'u32'],
      ['eps', 'f32'],
    ],
  },
  `
var<workgroup> red: array<f32, ${ROW_WG}>;
@compute @workgroup_size(${ROW_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let o = wid.x * u.D;
  var s = 0.0;
  for (var d = li; d < u.D; d += ${ROW_WG}u) { let v = x[o + d]; s += v * v; }
  red[li] = s;
  workgroupBarrier();
  for (var w = ${ROW_WG / 2}u; w > 0u; w = w / 2u) {
    if (li < w) { red[li] += red[li + w]; }
    workgroupBarrier();
  }
  let inv = inverseSqrt(red[0] / f32(u.D) + u.eps);
  for (var d = li; d < u.D; d += ${ROW_WG}u) { y[o + d] = x[o + d] * inv * g[d]; }
}`,
);

const attnCache = new Map<number, WgslKernel>();
/** Threads of an attention workgroup; positions per score tile. */
const ATT_WG = 64;

/**
 * Attention of one new position against the cache, one workgroup per (query head, row), for head
 * size `hd`. From the q|k|v row of the step: the query head (and its kv head's new key) get Qwen3's
 * per-head RMSNorm when `qkNorm`, then RoPE at `pos`; the first query head of each kv group writes the
 * new key and value into the cache at `pos` (no head of this dispatch reads that slot: the new
 * position is taken from the q|k|v row itself), and head 0 marks the position real in the mask.
 * Softmax over positions 0..pos in tiles with a running max (no [maxT] scores array), padded keys skipped.
 */
export function attentionKernel(hd: number, qkNorm: boolean): WgslKernel {
  const key = hd * 2 + (qkNorm ? 1 : 0);
  const hit = attnCache.get(key);
  if (hit) return hit;
  const DPT = Math.ceil(hd / ATT_WG); // head dims per thread
  const half = hd / 2;
  // Loads one head (offset `src` in the q|k|v row) into shared `dst`: normed (weights at `nw`), rotated.
  const load = (src: string, dst: string, nw: string) => `
  for (var j = 0u; j < ${DPT}u; j++) { let d = li + j * ${ATT_WG}u; if (d < ${hd}u) { tmp[d] = qkv[${src} + d]; } }
  workgroupBarrier();
  ${
    qkNorm
      ? `if (li == 0u) { var s = 0.0; for (var d = 0u; d < ${hd}u; d++) { s += tmp[d] * tmp[d]; } nrm = inverseSqrt(s / ${hd}.0 + u.eps); }
  workgroupBarrier();`
      : ''
  }
  for (var j = 0u; j < ${DPT}u; j++) {
    let d = li + j * ${ATT_WG}u;
    if (d < ${hd}u) {
      ${qkNorm ? `let a = tmp[d] * nrm * qkn[${nw} + d]; let pd = select(d - ${half}u, d + ${half}u, d < ${half}u); let b = tmp[pd] * nrm * qkn[${nw} + pd];` : `let a = tmp[d]; let b = tmp[select(d - ${half}u, d + ${half}u, d < ${half}u)];`}
      let rot = select(b, -b, d < ${half}u);
      ${dst}[d] = a * rope[u.pos * ${2 * hd}u + d] + rot * rope[u.pos * ${2 * hd}u + ${hd}u + d];
    }
  }
  workgroupBarrier();`;
  const inputs: [string, string][] = [
    ['qkv', 'f32'],
    ['rope', 'f32'],
  ];
  if (qkNorm) inputs.push(['qkn', 'f32']);
  const k = wgslKernel(
    `decode_attention_hd${hd}${qkNorm ? '_qknorm' : ''}`,
    {
      inputs,
      inouts: [
        ['mask', 'f32'],
        ['kc', 'f32'],
        ['vc', 'f32'],
      ],
      outputs: [['out', 'f32']],
      uniforms: [
        ['pos', 'u32'],
        ['maxT', 'u32'],
        ['H', 'u32'],
        ['KV', 'u32'],
        ['scale', 'f32'],
        ['eps', 'f32'],
      ],
    },
    `
var<workgroup> tmp: array<f32, ${hd}>;
var<workgroup> q: array<f32, ${hd}>;
var<workgroup> kn: array<f32, ${hd}>;
var<workgroup> sc: array<f32, ${ATT_WG}>;
var<workgroup> nrm: f32;
@compute @workgroup_size(${ATT_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let h = wid.x;
  let b = wid.y;
  let rep = u.H / u.KV;
  let kvh = h / rep;
  let row = b * (u.H + 2u * u.KV) * ${hd}u;
  ${load(`row + h * ${hd}u`, 'q', '0u')}
  ${load(`row + (u.H + kvh) * ${hd}u`, 'kn', `${hd}u`)}
  let cbase = (b * u.KV + kvh) * u.maxT * ${hd}u;
  let vrow = row + (u.H + u.KV + kvh) * ${hd}u;
  if (h % rep == 0u) {
    for (var j = 0u; j < ${DPT}u; j++) {
      let d = li + j * ${ATT_WG}u;
      if (d < ${hd}u) { kc[cbase + u.pos * ${hd}u + d] = kn[d]; vc[cbase + u.pos * ${hd}u + d] = qkv[vrow + d]; }
    }
  }
  if (h == 0u && li == 0u) { mask[b * u.maxT + u.pos] = 1.0; }
  var m = -3.0e38;
  var l = 0.0;
  var acc: array<f32, ${DPT}>;
  for (var t0 = 0u; t0 <= u.pos; t0 += ${ATT_WG}u) {
    let t = t0 + li;
    var s = -3.0e38;
    if (t < u.pos && mask[b * u.maxT + t] > 0.5) {
      var dot = 0.0;
      for (var d = 0u; d < ${hd}u; d++) { dot += q[d] * kc[cbase + t * ${hd}u + d]; }
      s = dot * u.scale;
    } else if (t == u.pos) {
      var dot = 0.0;
      for (var d = 0u; d < ${hd}u; d++) { dot += q[d] * kn[d]; }
      s = dot * u.scale;
    }
    sc[li] = s;
    workgroupBarrier();
    var tm = m;
    for (var i = 0u; i < ${ATT_WG}u; i++) { tm = max(tm, sc[i]); }
    let corr = exp(m - tm);
    l *= corr;
    for (var j = 0u; j < ${DPT}u; j++) { acc[j] *= corr; }
    let n = min(${ATT_WG}u, u.pos + 1u - t0);
    for (var i = 0u; i < n; i++) {
      if (sc[i] <= -1.0e38) { continue; }
      let p = exp(sc[i] - tm);
      l += p;
      let tt = t0 + i;
      for (var j = 0u; j < ${DPT}u; j++) {
        let d = li + j * ${ATT_WG}u;
        if (d < ${hd}u) {
          let vv = select(vc[cbase + tt * ${hd}u + d], qkv[vrow + d], tt == u.pos);
          acc[j] += p * vv;
        }
      }
    }
    m = tm;
    workgroupBarrier();
  }
  for (var j = 0u; j < ${DPT}u; j++) {
    let d = li + j * ${ATT_WG}u;
    if (d < ${hd}u) { out[(b * u.H + h) * ${hd}u + d] = acc[j] / l; }
  }
}`,
  );
  attnCache.set(key, k);
  return k;
}

const SAMPLE_WG = 256;

/**
 * The next token of each row from its logits, as sampling.ts's sampleToken does without top-k/top-p:
 * greedy (the first maximum) or the inverse CDF of softmax(logits / temperature) at the row's uniform
 * draw u[b] (in token order, the same walk as the CPU's). Writes [token, log-prob] per row, the
 * log-prob under the temperature's distribution (temperature 1 for greedy, as the CPU reports it).
 * One workgroup per row: each thread owns a contiguous chunk of the vocabulary.
 */
export const sampleKernel = wgslKernel(
  'decode_sample',
  {
    inputs: [
      ['logits', 'f32'],
      ['draw', 'f32'],
    ],
    outputs: [['out', 'f32']],
    uniforms: [
      ['V', 'u32'],
      ['invT', 'f32'],
      ['greedy', 'u32'],
    ],
  },
  `
var<workgroup> mx: array<f32, ${SAMPLE_WG}>;
var<workgroup> arg: array<u32, ${SAMPLE_WG}>;
var<workgroup> cs: array<f32, ${SAMPLE_WG}>;
@compute @workgroup_size(${SAMPLE_WG})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let b = wid.x;
  let o = b * u.V;
  let chunk = (u.V + ${SAMPLE_WG - 1}u) / ${SAMPLE_WG}u;
  let lo = min(li * chunk, u.V);
  let hi = min(lo + chunk, u.V);
  var m = -3.0e38;
  var a = 0u;
  for (var i = lo; i < hi; i++) { let z = logits[o + i] * u.invT; if (z > m) { m = z; a = i; } }
  mx[li] = m;
  arg[li] = a;
  workgroupBarrier();
  if (li == 0u) {
    var bm = mx[0];
    var ba = arg[0];
    for (var k = 1u; k < ${SAMPLE_WG}u; k++) { if (mx[k] > bm) { bm = mx[k]; ba = arg[k]; } }
    mx[0] = bm;
    arg[0] = ba;
  }
  workgroupBarrier();
  let zmax = mx[0];
  var s = 0.0;
  for (var i = lo; i < hi; i++) { s += exp(logits[o + i] * u.invT - zmax); }
  cs[li] = s;
  workgroupBarrier();
  if (li != 0u) { return; }
  var total = 0.0;
  for (var k = 0u; k < ${SAMPLE_WG}u; k++) { total += cs[k]; }
  var tok = arg[0];
  if (u.greedy == 0u) {
    // The chunk holding the draw, then the token within it; rounding past the end keeps the last token.
    var want = draw[b] * total;
    var k = 0u;
    while (k < ${SAMPLE_WG - 1}u && want > cs[k]) { want -= cs[k]; k++; }
    let klo = min(k * chunk, u.V);
    let khi = min(klo + chunk, u.V);
    tok = u.V - 1u;
    for (var i = klo; i < khi; i++) {
      want -= exp(logits[o + i] * u.invT - zmax);
      if (want <= 0.0) { tok = i; break; }
    }
    if (want > 0.0) { tok = max(klo, khi) - 1u; }
  }
  out[b * 2u] = f32(tok);
  out[b * 2u + 1u] = logits[o + tok] * u.invT - zmax - log(total);
}`,
);

/** Every decode kernel for these head sizes (compileWgslKernels: a shader error is a message, not a hang). */
export function decodeKernels(headDims: number[]): WgslKernel[] {
  const variants: LinearVariant[] = [
    { norm: true, weights: 3, bias: false, residual: false, swiglu: false },
    { norm: true, weights: 3, bias: true, residual: false, swiglu: false },
    { norm: false, weights: 1, bias: false, residual: true, swiglu: false },
    { norm: true, weights: 2, bias: false, residual: false, swiglu: true },
    { norm: false, weights: 1, bias: false, residual: false, swiglu: false },
  ];
  return [
    ...variants.map(linearKernel),
    headTiedKernel,
    embedKernel,
    normKernel,
    sampleKernel,
    ...headDims.flatMap((hd) => [attentionKernel(hd, false), attentionKernel(hd, true)]),
  ];
}
