// Per-token log-probabilities and entropies of given sequences: what the trainer differentiates.
//
// The head (final projection) and the log-softmax run in chunks of positions (`headLogprobs`): a
// batch's logits are B x T x V floats (16 x 200 x 151,669 = 1.9 GB for Qwen's vocabulary, and the
// softmax, its gradient and the log-softmax each as large again), which the wasm engine's 4 GiB
// heap cannot hold. Each chunk's logits exist only while that chunk is reduced to its target
// log-prob and entropy; the backward pass computes them again chunk by chunk ("chunked
// cross-entropy"), so the op keeps only the hidden states [N, D] for its gradient.
import { tf } from './engine.js';
import type { Transformer } from './transformer.js';
import { nativeOpsAvailable, targetLogprobNative, targetLogprobRows, targetLogprobRowsGrad } from './native-ops.js';
import { nativeAddon, nativeBlasActive } from './native-blas.js';
import { productWithExternal, type ExternalWeight } from './external-weights.js';
import { heap, offsetOf } from './native-heap.js';
import { type FusedOps, fusedOps } from './fused-ops.js';
import { headLogprobsInPlace, inPlaceAvailable } from './logprobs-in-place.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

export interface TokenLogprobs {
  /** log p(ids[:, t+1] | ids[:, :t+1]) for t = 0..T-2: [B, T-1]. */
  logprobs: tf.Tensor2D;
  /** Entropy of the next-token distribution at the same positions: [B, T-1]. */
  entropy?: tf.Tensor2D;
  /** Final hidden states [B, T, D] (for a value head). */
  hidden?: tf.Tensor3D;
}

export interface TokenLogprobOptions {
  attentionMask?: tf.Tensor2D;
  temperature?: number;
  withEntropy?: boolean;
  withHidden?: boolean;
  prefix?: tf.Tensor3D;
  /** A training pass (LoRA dropout on). */
  train?: boolean;
  /**
   * Positions per chunk of the head (default: `headChunkRows(vocab)`); 0 runs the head over every
   * position at once (the path before chunking: parity tests and the vocab-memory bench).
   */
  chunkRows?: number;
}

/** Bytes of one chunk's logits the chunked head aims at (a chunk holds about four [rows, V] arrays at once). */
export const HEAD_CHUNK_BYTES = 32 * 2 ** 20;

/**
 * Positions per head chunk for a vocabulary: HEAD_CHUNK_BYTES of logits (RFT_HEAD_CHUNK_MIB sets
 * the bytes; RFT_HEAD_CHUNK_MIB=0 turns chunking off), at least 16 rows so a chunk stays a matmul
 * BLAS runs well. Vocabulary 512: 16,384 rows (a training batch is one chunk); 151,669: 55 rows.
 */
export function headChunkRows(vocab: number): number {
  const env = process.env.RFT_HEAD_CHUNK_MIB;
  const bytes = env !== undefined && env !== '' ? Number(env) * 2 ** 20 : HEAD_CHUNK_BYTES;
  if (!(bytes > 0)) return 0;
  return Math.max(16, Math.floor(bytes / (4 * vocab)));
}

/** Log-softmax of logits [N, V] gathered at targets [N] with a one-hot (gather has no gradient on wasm). */
export function logprobsOfTargets(logits: tf.Tensor2D, targets: tf.Tensor1D): { logp: tf.Tensor1D; lsm: tf.Tensor2D } {
  const lsm = tf.logSoftmax(logits) as tf.Tensor2D;
  const oh = tf.cast(tf.oneHot(targets, logits.shape[1]), 'float32');
  return { logp: tf.sum(tf.mul(lsm, oh), -1) as tf.Tensor1D, lsm };
}

export function tokenLogprobs(model: Transformer, ids: tf.Tensor2D, opts: TokenLogprobOptions = {}): TokenLogprobs {
  const chunkRows = opts.chunkRows ?? headChunkRows(model.config.vocabSize);
  if (chunkRows === 0) return tokenLogprobsUnchunked(model, ids, opts);
  const [B, T] = ids.shape;
  const D = model.config.dModel;
  const { hidden } = model.hiddenStates(ids, {
    attentionMask: opts.attentionMask,
    prefix: opts.prefix,
    train: opts.train,
  });
  const P = hidden.shape[1] - T; // vision prefix positions come first
  // Position t predicts token t + 1: the last position predicts nothing and is never projected.
  const h = tf.reshape(tf.slice(hidden, [0, P, 0], [B, T - 1, D]), [B * (T - 1), D]) as tf.Tensor2D;
  const targets = tf.reshape(tf.slice(ids, [0, 1], [B, T - 1]), [-1]) as tf.Tensor1D;
  const out = headLogprobs(model, h, targets, {
    temperature: opts.temperature,
    withEntropy: opts.withEntropy,
    chunkRows,
  });
  const res: TokenLogprobs = { logprobs: tf.reshape(out.logprobs, [B, T - 1]) as tf.Tensor2D };
  if (out.entropy) res.entropy = tf.reshape(out.entropy, [B, T - 1]) as tf.Tensor2D;
  if (opts.withHidden) res.hidden = tf.slice(hidden, [0, P, 0], [B, T, D]) as tf.Tensor3D;
  return res;
}

/** The unchunked path: the whole [B, T, V] logits at once (small vocabularies; parity tests and the bench). */
export function tokenLogprobsUnchunked(
  model: Transformer,
  ids: tf.Tensor2D,
  opts: TokenLogprobOptions = {},
): TokenLogprobs {
  const [B, T] = ids.shape;
  const V = model.config.vocabSize;
  const out = model.forward(ids, {
    attentionMask: opts.attentionMask,
    prefix: opts.prefix,
    returnHidden: opts.withHidden,
    train: opts.train,
  });
  let logits = out.logits;
  const P = logits.shape[1] - T; // vision prefix positions come first
  logits = tf.slice(logits, [0, P, 0], [B, T - 1, V]);
  if (opts.temperature !== undefined && opts.temperature !== 1) logits = tf.div(logits, opts.temperature);
  const flat = tf.reshape(logits, [B * (T - 1), V]) as tf.Tensor2D;
  const targets = tf.reshape(tf.slice(ids, [0, 1], [B, T - 1]), [-1]) as tf.Tensor1D;
  if (!opts.withEntropy && nativeOpsAvailable()) {
    // One fused native op (log-softmax at the target and its gradient) when no entropy is needed.
    const res: TokenLogprobs = { logprobs: tf.reshape(targetLogprobNative(flat, targets), [B, T - 1]) as tf.Tensor2D };
    if (opts.withHidden && out.hidden)
      res.hidden = tf.slice(out.hidden, [0, P, 0], [B, T, model.config.dModel]) as tf.Tensor3D;
    return res;
  }
  const { logp, lsm } = logprobsOfTargets(flat, targets);
  const res: TokenLogprobs = { logprobs: tf.reshape(logp, [B, T - 1]) as tf.Tensor2D };
  if (opts.withEntropy) {
    const ent = tf.neg(tf.sum(tf.mul(tf.exp(lsm), lsm), -1));
    res.entropy = tf.reshape(ent, [B, T - 1]) as tf.Tensor2D;
  }
  if (opts.withHidden && out.hidden)
    res.hidden = tf.slice(out.hidden, [0, P, 0], [B, T, model.config.dModel]) as tf.Tensor3D;
  return res;
}

/** The head as the chunked op multiplies by it. */
export type Head = { heap: tf.Tensor2D; vocabFirst: boolean } | { external: ExternalWeight };

/** Whether the head's weight takes a gradient here: an in-heap trainable variable (full fine-tuning). */
function trainableHead(head: Head): head is { heap: tf.Variable & tf.Tensor2D; vocabFirst: boolean } {
  return 'heap' in head && head.heap instanceof tf.Variable && head.heap.trainable;
}

/** Logits of hidden rows h [n, D]: [n, V]. */
function headProduct(head: Head, w: tf.Tensor2D | undefined, h: tf.Tensor2D): tf.Tensor2D {
  if ('external' in head) return productWithExternal(h, head.external, true);
  const wt = w ?? head.heap;
  // The tied table is [V, D] (h W^T), lm_head [D, V] (h W); plain wasm's transposed matmul is slow.
  if (head.vocabFirst) return nativeBlasActive() ? tf.matMul(h, wt, false, true) : tf.matMul(h, tf.transpose(wt));
  return tf.matMul(h, wt);
}

/** dh = dz @ (the head as h -> logits reads it)^T: [n, D]. */
function headInputGrad(head: Head, w: tf.Tensor2D | undefined, dz: tf.Tensor2D): tf.Tensor2D {
  if ('external' in head) return productWithExternal(dz, head.external, false);
  const wt = w ?? head.heap;
  if (head.vocabFirst) return tf.matMul(dz, wt);
  return nativeBlasActive() ? tf.matMul(dz, wt, false, true) : tf.matMul(dz, tf.transpose(wt));
}

/** acc += the head weight's gradient from one chunk (in place with the native addon: no V x D temporary per chunk). */
function addHeadWeightGrad(acc: tf.Tensor2D, vocabFirst: boolean, h: tf.Tensor2D, dz: tf.Tensor2D): tf.Tensor2D {
  const sgemmExt = nativeAddon()?.sgemmExt;
  if (nativeBlasActive() && sgemmExt && tf.getBackend() === 'wasm') {
    // [V, D] += dz^T h, or [D, V] += h^T dz (transA = 1 over the chunk's rows).
    const [a, b] = vocabFirst ? [dz, h] : [h, dz];
    const buf = heap();
    sgemmExt(buf, offsetOf(a), buf, offsetOf(b), buf, offsetOf(acc), a.shape[1], b.shape[1], a.shape[0], 1, 0, 1, 1);
    return acc;
  }
  const g = vocabFirst ? tf.matMul(dz, h, true, false) : tf.matMul(h, dz, true, false);
  const sum = tf.add(acc, g) as tf.Tensor2D;
  g.dispose();
  acc.dispose();
  return sum;
}

/**
 * Log-probs of `targets` [N] (int32) under the head applied to hidden rows h [N, D], and their
 * entropies when asked, in chunks of `chunkRows` positions; differentiable in h (and in the head
 * weight when it trains). Gradient of a chunk with z = logits / temperature, p = softmax(z):
 *   d logp / dz = onehot(t) - p,   d H / dz = -p (log p + H),   and dz / dlogits = 1 / temperature.
 */
export function headLogprobs(
  model: Transformer,
  h: tf.Tensor2D,
  targets: tf.Tensor1D,
  opts: { temperature?: number; withEntropy?: boolean; chunkRows?: number } = {},
): { logprobs: tf.Tensor1D; entropy?: tf.Tensor1D } {
  const [N] = h.shape;
  const V = model.config.vocabSize;
  const head = model.headWeight() as Head;
  const inv = opts.temperature !== undefined && opts.temperature !== 1 ? 1 / opts.temperature : 1;
  const withEntropy = opts.withEntropy === true;
  const rows = Math.max(1, opts.chunkRows || headChunkRows(V) || N);
  const t = targets.dtype === 'int32' ? targets : (tf.cast(targets, 'int32') as tf.Tensor1D);
  const native = nativeOpsAvailable();
  // The webgpu engine's fused log-softmax at the target (and entropy), forward and backward.
  const { targetLogprob: fusedLogp, targetLogprobGrad: fusedLogpGrad } = native ? {} : fusedOps();
  const trains = trainableHead(head);
  if (!withEntropy && inPlaceAvailable()) return { logprobs: headLogprobsInPlace(head, h, t, V, inv, rows, trains) };
  const c: HeadPass = { head, N, V, rows, inv, withEntropy, native, trains, fusedLogp, fusedLogpGrad };

  const f = tf.customGrad(((...args: unknown[]) => {
    const hs = args[0] as tf.Tensor2D;
    const w = trains ? (args[1] as tf.Tensor2D) : undefined;
    const save = args[trains ? 2 : 1] as tf.GradSaveFunc;
    const value = forwardChunks(c, hs, w, t);
    // The targets too: made inside the forward pass, they are disposed before the backward pass
    // unless saved (the webgpu engine frees their buffer at its next submit).
    save(trains ? [hs, w!, t] : [hs, t]);
    return { value, gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => backwardChunks(c, dy, saved) };
  }) as unknown as CustomGradFn);
  const out = (trains ? f(h, head.heap) : f(h)) as tf.Tensor;
  if (!withEntropy) return { logprobs: out as tf.Tensor1D };
  return {
    logprobs: tf.squeeze(tf.slice(out, [0, 0], [1, N]), [0]) as tf.Tensor1D,
    entropy: tf.squeeze(tf.slice(out, [1, 0], [1, N]), [0]) as tf.Tensor1D,
  };
}

/** One headLogprobs pass: the head, the sizes, and which kernels reduce a chunk. */
interface HeadPass {
  head: Head;
  /** Rows (positions) in all. */
  N: number;
  V: number;
  /** Rows per chunk. */
  rows: number;
  /** 1 / temperature. */
  inv: number;
  withEntropy: boolean;
  /** The native addon's target log-prob ops. */
  native: boolean;
  /** The head weight trains (its gradient is returned too). */
  trains: boolean;
  fusedLogp?: FusedOps['targetLogprob'];
  fusedLogpGrad?: FusedOps['targetLogprobGrad'];
}

/** z = logits / temperature of rows [r0, r0 + n). */
function chunkLogits(c: HeadPass, hs: tf.Tensor2D, w: tf.Tensor2D | undefined, r0: number, n: number): tf.Tensor2D {
  return tf.tidy(() => {
    const hc = n === c.N ? hs : (tf.slice(hs, [r0, 0], [n, hs.shape[1]]) as tf.Tensor2D);
    const z = headProduct(c.head, w, hc);
    return c.inv === 1 ? z : (tf.mul(z, c.inv) as tf.Tensor2D);
  });
}

/** The forward pass, chunk by chunk: [N] log-probs, or [2, N] = (log-probs, entropies) (customGrad takes a single tensor). */
function forwardChunks(c: HeadPass, hs: tf.Tensor2D, w: tf.Tensor2D | undefined, t: tf.Tensor1D): tf.Tensor {
  const { N, rows, withEntropy, native, fusedLogp } = c;
  const lps: tf.Tensor[] = [];
  const ents: tf.Tensor[] = [];
  for (let r0 = 0; r0 < N; r0 += rows) {
    const n = Math.min(rows, N - r0);
    // Everything of size [n, V] is freed here; only the chunk's [n] results leave the tidy.
    const part = tf.tidy(() => {
      const z = chunkLogits(c, hs, w, r0, n);
      const tc = n === N ? t : (tf.slice(t, [r0], [n]) as tf.Tensor1D);
      if (!withEntropy && native) return [targetLogprobRows(z, tc)];
      if (fusedLogp) {
        const r = fusedLogp(z, tc, withEntropy);
        return r.entropy ? [r.logp, r.entropy] : [r.logp];
      }
      const { logp, lsm } = logprobsOfTargets(z, tc);
      return withEntropy ? [logp, tf.neg(tf.sum(tf.mul(tf.exp(lsm), lsm), -1))] : [logp];
    });
    lps.push(part[0]!);
    if (withEntropy) ents.push(part[1]!);
  }
  const lp = lps.length === 1 ? lps[0]! : tf.concat(lps);
  const ent = withEntropy ? (ents.length === 1 ? ents[0]! : tf.concat(ents)) : undefined;
  return ent ? tf.stack([lp, ent]) : lp;
}

/** The backward pass, chunk by chunk: the gradient in the hidden rows (and in the head weight when it trains). */
function backwardChunks(c: HeadPass, dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] {
  const { N, rows, trains, withEntropy, head } = c;
  const hsv = saved[0] as tf.Tensor2D;
  const wv = trains ? (saved[1] as tf.Tensor2D) : undefined;
  const ts = saved[saved.length - 1] as tf.Tensor1D;
  const dLp = withEntropy ? (tf.squeeze(tf.slice(dy, [0, 0], [1, N]), [0]) as tf.Tensor1D) : (dy as tf.Tensor1D);
  const dEnt = withEntropy ? (tf.squeeze(tf.slice(dy, [1, 0], [1, N]), [0]) as tf.Tensor1D) : undefined;
  const dhs: tf.Tensor[] = [];
  let dW = wv ? (tf.zeros(wv.shape) as tf.Tensor2D) : undefined;
  for (let r0 = 0; r0 < N; r0 += rows) {
    const n = Math.min(rows, N - r0);
    // Recompute this chunk's logits: nothing of size [N, V] was kept from the forward pass.
    const dz = tf.tidy(() => chunkLogitsGrad(c, chunkLogits(c, hsv, wv, r0, n), ts, dLp, dEnt, r0, n));
    dhs.push(headInputGrad(head, wv, dz));
    if (dW) {
      const hc = n === N ? hsv : (tf.slice(hsv, [r0, 0], [n, hsv.shape[1]]) as tf.Tensor2D);
      dW = addHeadWeightGrad(dW, (head as { vocabFirst: boolean }).vocabFirst, hc, dz);
      if (hc !== hsv) hc.dispose();
    }
    dz.dispose();
  }
  const dh = dhs.length === 1 ? dhs[0]! : tf.concat(dhs);
  if (dhs.length > 1) tf.dispose(dhs);
  return dW ? [dh, dW] : [dh];
}

/** The gradient in a chunk's logits z (rows [r0, r0 + n)) of its log-probs (and entropies), scaled by 1 / temperature. */
function chunkLogitsGrad(
  c: HeadPass,
  z: tf.Tensor2D,
  ts: tf.Tensor1D,
  dLp: tf.Tensor1D,
  dEnt: tf.Tensor1D | undefined,
  r0: number,
  n: number,
): tf.Tensor2D {
  const { N, V, inv, native, fusedLogpGrad } = c;
  const tc = n === N ? ts : (tf.slice(ts, [r0], [n]) as tf.Tensor1D);
  const dlc = n === N ? dLp : (tf.slice(dLp, [r0], [n]) as tf.Tensor1D);
  if (fusedLogpGrad)
    return fusedLogpGrad(z, tc, dlc, dEnt && (n === N ? dEnt : (tf.slice(dEnt, [r0], [n]) as tf.Tensor1D)), inv);
  let g: tf.Tensor2D;
  let lsm: tf.Tensor2D | undefined;
  if (native)
    g = targetLogprobRowsGrad(z, tc, dlc.dtype === 'float32' ? dlc : (tf.cast(dlc, 'float32') as tf.Tensor1D));
  else {
    lsm = tf.logSoftmax(z) as tf.Tensor2D;
    const oh = tf.cast(tf.oneHot(tc, V), 'float32');
    g = tf.mul(tf.sub(oh, tf.exp(lsm)), tf.expandDims(dlc, 1)) as tf.Tensor2D;
  }
  if (dEnt) {
    lsm ??= tf.logSoftmax(z) as tf.Tensor2D;
    const p = tf.exp(lsm);
    const H = tf.neg(tf.sum(tf.mul(p, lsm), -1, true));
    const dec = n === N ? dEnt : tf.slice(dEnt, [r0], [n]);
    g = tf.sub(g, tf.mul(tf.mul(p, tf.add(lsm, H)), tf.expandDims(dec, 1))) as tf.Tensor2D;
  }
  return inv === 1 ? g : (tf.mul(g, inv) as tf.Tensor2D);
}

/** Mean next-token cross-entropy over positions where mask [B, T-1] is 1 (language-model / SFT loss). */
export function lmLoss(
  model: Transformer,
  ids: tf.Tensor2D,
  mask: tf.Tensor2D,
  attentionMask?: tf.Tensor2D,
  opts: { chunkRows?: number } = {},
): tf.Scalar {
  const { logprobs } = tokenLogprobs(model, ids, { attentionMask, chunkRows: opts.chunkRows });
  return tf.div(tf.neg(tf.sum(tf.mul(logprobs, mask))), tf.maximum(tf.sum(mask), 1)) as tf.Scalar;
}
