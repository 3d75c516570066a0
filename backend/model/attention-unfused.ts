// The model's attention written with plain tfjs ops (causal bias, grouped-query heads repeated): what
// the Transformer runs without a fused op, and the reference the fused kernels are tested against.
import { tf } from './engine.js';

/** The additive bias that blocks a position (a future token, a padded key). */
export const NEG_INF = -1e9;

/**
 * The model's unfused causal attention (as hiddenStates runs it without a fused op and a cache) on
 * the fused ops' layout: q [B, T, H, hd], k and v [B, T, KV, hd], keyMask [B, T] -> [B, T, H, hd].
 * The reference of the fused kernels' tests and of the per-op GPU bench.
 */
export function attentionUnfused(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, keyMask: tf.Tensor2D): tf.Tensor4D {
  const [, T, H, hd] = q.shape;
  const rep = H / k.shape[2];
  const heads = (x: tf.Tensor4D) => tf.transpose(x, [0, 2, 1, 3]) as tf.Tensor4D;
  const kh = rep > 1 ? repeatKv(heads(k), rep) : heads(k);
  const vh = rep > 1 ? repeatKv(heads(v), rep) : heads(v);
  const scores = tf.add(
    tf.matMul(tf.mul(heads(q), 1 / Math.sqrt(hd)), kh, false, true),
    attentionBias(keyMask, 0, T, T),
  );
  return heads(tf.matMul(tf.softmax(scores), vh) as tf.Tensor4D);
}

/** Additive attention bias [B, 1, T, Tk]: causal over absolute positions, and padded keys blocked. */
export function attentionBias(keyMask: tf.Tensor2D, start: number, T: number, Tk: number): tf.Tensor4D {
  const causal = new Float32Array(T * Tk);
  for (let i = 0; i < T; i++) for (let j = 0; j < Tk; j++) causal[i * Tk + j] = j <= start + i ? 0 : NEG_INF;
  const c = tf.tensor2d(causal, [T, Tk]);
  const pad = tf.mul(tf.sub(1, keyMask), NEG_INF); // [B, Tk]
  return tf.add(tf.reshape(c, [1, 1, T, Tk]), tf.reshape(pad, [keyMask.shape[0], 1, 1, Tk])) as tf.Tensor4D;
}

/** [B, KV, T, hd] -> [B, KV*rep, T, hd], each kv head serving `rep` query heads. */
export function repeatKv(x: tf.Tensor4D, rep: number): tf.Tensor4D {
  const [B, KV, T, hd] = x.shape;
  // Rank-4 tile: tfjs has no tile gradient for rank 5.
  return tf.reshape(tf.tile(tf.reshape(x, [B, KV, 1, T * hd]), [1, 1, rep, 1]), [B, KV * rep, T, hd]) as tf.Tensor4D;
}
