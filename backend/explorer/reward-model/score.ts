// A learned reward model is the transformer with a scalar value head: the score of a conversation
// is the head's value at its last real token (right padding; causal attention keeps padding out).
import { tf } from '../../model/engine.js';
import type { Transformer } from '../../model/transformer.js';

/** Scores [B] of token sequences as a tensor (differentiable; call inside tidy / variableGrads). */
export function scoreTensor(model: Transformer, seqs: number[][], padId: number): tf.Tensor1D {
  const B = seqs.length;
  const T = Math.max(...seqs.map((s) => s.length));
  if (T > model.config.maxSeqLen) throw new Error(`reward model: a sequence of ${T} tokens exceeds maxSeqLen ${model.config.maxSeqLen}`);
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
  const out = model.forward(tf.tensor2d(ids, [B, T], 'int32'), { attentionMask: tf.tensor2d(mask, [B, T]), returnHidden: true });
  const values = model.values(out.hidden!);
  return tf.sum(tf.mul(values, tf.tensor2d(last, [B, T])), 1) as tf.Tensor1D;
}

export async function scoreSequences(model: Transformer, seqs: number[][], padId: number, batch = 16): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < seqs.length; i += batch) {
    const t = tf.tidy(() => scoreTensor(model, seqs.slice(i, i + batch), padId));
    out.push(...((await t.data()) as Float32Array));
    t.dispose();
  }
  return out;
}
