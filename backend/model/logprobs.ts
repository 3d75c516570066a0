// Per-token log-probabilities and entropies of given sequences: what the trainer differentiates.
import { tf } from './engine.js';
import type { Transformer } from './transformer.js';
import { nativeOpsAvailable, targetLogprobNative } from './native-ops.js';

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
}

/** Log-softmax of logits [N, V] gathered at targets [N] with a one-hot (gather has no gradient on wasm). */
export function logprobsOfTargets(logits: tf.Tensor2D, targets: tf.Tensor1D): { logp: tf.Tensor1D; lsm: tf.Tensor2D } {
  const lsm = tf.logSoftmax(logits) as tf.Tensor2D;
  const oh = tf.cast(tf.oneHot(targets, logits.shape[1]), 'float32');
  return { logp: tf.sum(tf.mul(lsm, oh), -1) as tf.Tensor1D, lsm };
}

export function tokenLogprobs(model: Transformer, ids: tf.Tensor2D, opts: TokenLogprobOptions = {}): TokenLogprobs {
  const [B, T] = ids.shape;
  const V = model.config.vocabSize;
  const out = model.forward(ids, { attentionMask: opts.attentionMask, prefix: opts.prefix, returnHidden: opts.withHidden, train: opts.train });
  let logits = out.logits;
  const P = logits.shape[1] - T; // vision prefix positions come first
  logits = tf.slice(logits, [0, P, 0], [B, T - 1, V]);
  if (opts.temperature !== undefined && opts.temperature !== 1) logits = tf.div(logits, opts.temperature);
  const flat = tf.reshape(logits, [B * (T - 1), V]) as tf.Tensor2D;
  const targets = tf.reshape(tf.slice(ids, [0, 1], [B, T - 1]), [-1]) as tf.Tensor1D;
  if (!opts.withEntropy && nativeOpsAvailable()) {
    // One fused native op (log-softmax at the target and its gradient) when no entropy is needed.
    const res: TokenLogprobs = { logprobs: tf.reshape(targetLogprobNative(flat, targets), [B, T - 1]) as tf.Tensor2D };
    if (opts.withHidden && out.hidden) res.hidden = tf.slice(out.hidden, [0, P, 0], [B, T, model.config.dModel]) as tf.Tensor3D;
    return res;
  }
  const { logp, lsm } = logprobsOfTargets(flat, targets);
  const res: TokenLogprobs = { logprobs: tf.reshape(logp, [B, T - 1]) as tf.Tensor2D };
  if (opts.withEntropy) {
    const ent = tf.neg(tf.sum(tf.mul(tf.exp(lsm), lsm), -1));
    res.entropy = tf.reshape(ent, [B, T - 1]) as tf.Tensor2D;
  }
  if (opts.withHidden && out.hidden) res.hidden = tf.slice(out.hidden, [0, P, 0], [B, T, model.config.dModel]) as tf.Tensor3D;
  return res;
}

/** Mean next-token cross-entropy over positions where mask [B, T-1] is 1 (language-model / SFT loss). */
export function lmLoss(model: Transformer, ids: tf.Tensor2D, mask: tf.Tensor2D, attentionMask?: tf.Tensor2D): tf.Scalar {
  const { logprobs } = tokenLogprobs(model, ids, { attentionMask });
  return tf.div(tf.neg(tf.sum(tf.mul(logprobs, mask))), tf.maximum(tf.sum(mask), 1)) as tf.Scalar;
}
