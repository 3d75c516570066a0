// The parts of a trainer step (trainer.ts trainStep) that hold no trainer state: DPO's whole pairs when
// a row is skipped, gradient accumulation over micro-batches, and the step's signals for the collapse
// guard (the usual rows' KL to the reference, their reward and sampled entropy).
import { InputError } from '../core/errors.js';
import type { Experience } from '../core/types.js';
import { tf, tidy } from '../model/engine.js';
import type { TrainBatch } from './batch.js';

/**
 * Sum over the usual rows' trained tokens of (behaviour log-prob - reference log-prob), and their
 * count: the k1 estimate of KL(sampling policy || reference) per token, from tokens that policy sampled.
 */
export async function usualLogRatio(
  micro: Experience[],
  batch: TrainBatch,
  refLogprob: tf.Tensor2D,
): Promise<[number, number]> {
  // Usual rows with a behaviour log-prob per response token (a row without them has none to compare).
  const rows = micro.map((e) => (e.source === 'usual' && e.logprobs.length === e.responseTokens.length ? 1 : 0));
  if (!rows.some((x) => x)) return [0, 0];
  const [sum, n] = tidy(() => {
    const usual = tf.mul(batch.actionMask, tf.expandDims(tf.tensor1d(rows), 1));
    return [tf.sum(tf.mul(tf.sub(batch.oldLogprob, refLogprob), usual)), tf.sum(usual)];
  });
  const out: [number, number] = [(await sum!.data())[0]!, (await n!.data())[0]!];
  tf.dispose([sum!, n!]);
  return out;
}

/**
 * Mean reward of the batch's usual rollouts and the entropy of the policy that sampled them,
 * estimated as the mean -log-prob of the tokens it sampled (E[-log p] = H): the collapse guard's
 * other signals, for every algorithm (no entropy term needed).
 */
export function rolloutStats(usual: Experience[]): { batch_reward?: number; sampled_entropy?: number } {
  const ok = usual.filter((e) => e.status === 'ok');
  if (!ok.length) return {};
  let nll = 0;
  let n = 0;
  for (const e of ok)
    e.logprobs.forEach((lp, j) => {
      if (e.actionMask[j] && Number.isFinite(lp)) {
        nll -= lp;
        n++;
      }
    });
  return { batch_reward: ok.reduce((a, e) => a + e.reward, 0) / ok.length, ...(n ? { sampled_entropy: nll / n } : {}) };
}

export function accumulate(acc: Record<string, tf.Tensor>, g: Record<string, tf.Tensor>): Record<string, tf.Tensor> {
  if (Object.keys(acc).length === 0) return g;
  for (const [k, v] of Object.entries(g)) {
    const prev = acc[k];
    acc[k] = prev ? tf.add(prev, v) : v;
    if (prev) {
      prev.dispose();
      v.dispose();
    }
  }
  return acc;
}

/** Pair rows (chosen at 2k, rejected at 2k+1): a skipped row takes its partner with it. */
export function wholePairs(
  all: Experience[],
  skipped: { id: string; reason: string }[],
): { keep: Experience[]; skipped: { id: string; reason: string }[] } {
  if (all.length % 2 !== 0)
    throw new InputError(
      `paired rows (DPO): a batch of (chosen, rejected) pairs has an even number of rows, got ${all.length}`,
    );
  const bad = new Set(skipped.map((x) => x.id));
  const keep: Experience[] = [];
  const out = [...skipped];
  for (let k = 0; k < all.length; k += 2) {
    const [c, r] = [all[k]!, all[k + 1]!];
    if (!bad.has(c.id) && !bad.has(r.id)) keep.push(c, r);
    else for (const x of [c, r]) if (!bad.has(x.id)) out.push({ id: x.id, reason: 'its pair partner was skipped' });
  }
  return { keep, skipped: out };
}
