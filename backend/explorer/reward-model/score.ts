// A learned reward model is the transformer with a scalar value head: the score of a conversation
// is the head's value at its last real token (right padding; causal attention keeps padding out).
import { tf } from '../../model/engine.js';
import type { Transformer } from '../../model/transformer.js';

export interface ScoreBatch {
  ids: tf.Tensor2D;
  mask: tf.Tensor2D;
  /** One-hot of each row's last real token. */
  last: tf.Tensor2D;
}

/**
 * Input tensors of a batch, right-padded. Made outside tf.variableGrads: the embedding's gradient
 * reads the ids after the forward scope, so they must outlive it. The caller disposes them.
 */
export function scoreBatch(model: Transformer, seqs: number[][], padId: number): ScoreBatch {
  const B = seqs.length;
  const T = Math.max(...seqs.map((s) => s.length));
  if (T > model.config.maxSeqLen)
    throw new Error(`reward model: a sequence of ${T} tokens exceeds maxSeqLen ${model.config.maxSeqLen}`);
  const ids = new Int32Array(B * T).fill(padId);
  const mask = new Float32Array(B * T);
  const last = new Float32Array(B * T);
  seqs.forEach((s, b) => {
    s.forEach((t, i) => {
      ids[b * T + i] = t;
      mask[b * T + i] = 1;
    });
    last[b * T + s.length - 1] = 1;
  });
  return { ids: tf.tensor2d(ids, [B, T], 'int32'), mask: tf.tensor2d(mask, [B, T]), last: tf.tensor2d(last, [B, T]) };
}

export function disposeBatch(b: ScoreBatch): void {
  b.ids.dispose();
  b.mask.dispose();
  b.last.dispose();
}

/** Scores [B] as a tensor (differentiable; call inside tidy / variableGrads). */
export function scoreTensor(model: Transformer, b: ScoreBatch): tf.Tensor1D {
  // Hidden states only: a score needs the value head, not the [B, T, V] logits.
  const { hidden } = model.hiddenStates(b.ids, { attentionMask: b.mask });
  return tf.sum(tf.mul(model.values(hidden), b.last), 1) as tf.Tensor1D;
}

export async function scoreSequences(
  model: Transformer,
  seqs: number[][],
  padId: number,
  batch = 16,
): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < seqs.length; i += batch) {
    const b = scoreBatch(model, seqs.slice(i, i + batch), padId);
    const t = tf.tidy(() => scoreTensor(model, b));
    disposeBatch(b);
    out.push(...((await t.data()) as Float32Array));
    t.dispose();
  }
  return out;
}
