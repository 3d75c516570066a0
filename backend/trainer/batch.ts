// Turns a batch of experiences into aligned training tensors. Sequences are prompt + response,
// right-padded; every per-token array is laid out over the L-1 "next token" positions, where
// position t predicts token t+1, so response token j of row b sits at position P_b + j - 1.
import { tf } from '../model/engine.js';
import type { Experience } from '../core/types.js';

export interface TrainBatch {
  ids: tf.Tensor2D; // [B, L] int32
  attentionMask: tf.Tensor2D; // [B, L]
  /** 1 where a model-generated response token is predicted (trained on): [B, L-1]. */
  actionMask: tf.Tensor2D;
  /** Behaviour log-probs at the same positions (0 elsewhere): [B, L-1]. */
  oldLogprob: tf.Tensor2D;
  advantages: tf.Tensor2D;
  returns: tf.Tensor2D;
  /** 1 for expert rows. */
  expertMask: tf.Tensor1D;
  /** Number of trained tokens. */
  tokens: number;
  rows: number;
  length: number;
}

export function buildBatch(exps: Experience[], padId: number): TrainBatch {
  const B = exps.length;
  if (B === 0) throw new Error('buildBatch: empty batch');
  const L = Math.max(...exps.map((e) => e.promptTokens.length + e.responseTokens.length));
  const T = L - 1;
  const ids = new Int32Array(B * L).fill(padId);
  const att = new Float32Array(B * L);
  const mask = new Float32Array(B * T);
  const old = new Float32Array(B * T);
  const adv = new Float32Array(B * T);
  const ret = new Float32Array(B * T);
  const expert = new Float32Array(B);
  let tokens = 0;
  exps.forEach((e, b) => {
    const P = e.promptTokens.length;
    const R = e.responseTokens.length;
    if (P === 0) throw new Error(`experience ${e.id}: empty prompt (needs at least the bos token)`);
    if (e.actionMask.length !== R)
      throw new Error(`experience ${e.id}: actionMask has ${e.actionMask.length} entries for ${R} response tokens`);
    for (let t = 0; t < P; t++) ids[b * L + t] = e.promptTokens[t]!;
    for (let j = 0; j < R; j++) ids[b * L + P + j] = e.responseTokens[j]!;
    for (let t = 0; t < P + R; t++) att[b * L + t] = 1;
    expert[b] = e.source === 'expert' ? 1 : 0;
    for (let j = 0; j < R; j++) {
      const pos = b * T + P + j - 1;
      const m = e.actionMask[j]! ? 1 : 0;
      mask[pos] = m;
      tokens += m;
      old[pos] = e.logprobs[j] ?? 0;
      adv[pos] = e.advantages?.[j] ?? 0;
      ret[pos] = e.returns?.[j] ?? 0;
    }
  });
  return {
    ids: tf.tensor2d(ids, [B, L], 'int32'),
    attentionMask: tf.tensor2d(att, [B, L]),
    actionMask: tf.tensor2d(mask, [B, T]),
    oldLogprob: tf.tensor2d(old, [B, T]),
    advantages: tf.tensor2d(adv, [B, T]),
    returns: tf.tensor2d(ret, [B, T]),
    expertMask: tf.tensor1d(expert),
    tokens,
    rows: B,
    length: L,
  };
}

export function disposeBatch(b: TrainBatch): void {
  tf.dispose([b.ids, b.attentionMask, b.actionMask, b.oldLogprob, b.advantages, b.returns, b.expertMask]);
}

/** Per-row values at response positions back to per-response-token arrays (e.g. recomputed log-probs). */
export function responseValues(exps: Experience[], perPos: Float32Array, T: number): number[][] {
  return exps.map((e, b) => {
    const P = e.promptTokens.length;
    return e.responseTokens.map((_, j) => perPos[b * T + P + j - 1]!);
  });
}

/**
 * Partial rollouts with `loss_segments: fresh`: tokens of segments sampled by weights older than
 * `minVersion` (the staleness bound) leave the loss (action mask 0); rows without segments are kept
 * as they are. Returns new rows (the sampled ones are not changed) and how many tokens were masked.
 */
export function maskStaleSegments(
  exps: Experience[],
  minVersion: number,
): { experiences: Experience[]; masked: number } {
  let masked = 0;
  const out = exps.map((e) => {
    if (!e.segments?.some((s) => s.version < minVersion)) return e;
    const mask = [...e.actionMask];
    for (const s of e.segments) {
      if (s.version >= minVersion) continue;
      for (let j = s.start; j < s.end && j < mask.length; j++) {
        masked += mask[j]!;
        mask[j] = 0;
      }
    }
    return { ...e, actionMask: mask };
  });
  return { experiences: out, masked };
}
