// Training the reward model: Bradley-Terry on preference pairs (-log sigmoid(s_chosen - s_rejected)),
// plus a pointwise term on ratings (sigmoid(score) regressed to the rating scaled to 0..1), which
// also lets ratings on single answers (no pair) teach it. AdamW, seeded mini-batches. With
// validation pairs (tasks the training never sees), their pairwise accuracy is measured every few
// steps and the weights of the best one are kept: a small preference set is memorised long before
// the steps run out, and the last step's weights are then the most overfitted ones.
import { InputError } from '../../core/errors.js';
import { Rng } from '../../core/rng.js';
import { tf } from '../../model/engine.js';
import { AdamW, clipByGlobalNorm } from '../../model/optim.js';
import type { Transformer } from '../../model/transformer.js';
import type { PreferenceData, PreferencePair } from './data.js';
import { disposeBatch, scoreBatch, scoreTensor } from './score.js';
import { pairScores } from './pair-scores.js';
import { pairAccuracy } from './pair-metrics.js';

export interface RewardTrainOptions {
  steps: number;
  lr?: number;
  batchSize?: number;
  /** Weight of the pointwise rating loss (0 = pairs only). */
  ratingWeight?: number;
  /** AdamW's decoupled weight decay (default 0). */
  weightDecay?: number;
  seed?: number;
  padId: number;
  gradClip?: number;
  /** After each step (progress for the CLI and the editor). */
  onStep?: (step: number, loss: number) => void;
  /** Pairs of tasks left out of training: scored every `evalEvery` steps; the best weights are kept. */
  validation?: PreferencePair[];
  /** Steps between validation scorings (default: a tenth of the steps, at least 10). */
  evalEvery?: number;
  /** After each validation scoring (pairwise accuracy and Bradley-Terry loss). */
  onValidation?: (step: number, accuracy: number, loss: number) => void;
}

export interface RewardTrainResult {
  losses: number[];
  pairs: number;
  ratings: number;
  /** With validation pairs: the step whose weights were kept and their validation accuracy. */
  bestStep?: number;
  validationAccuracy?: number;
  stepsRun: number;
}

/** log(1 + e^x), stable: the Bradley-Terry loss of a pair is softplus(s_rejected - s_chosen). */
const softplus = (x: number): number => Math.max(x, 0) + Math.log1p(Math.exp(-Math.abs(x)));

export async function trainRewardModel(
  model: Transformer,
  data: PreferenceData,
  o: RewardTrainOptions,
): Promise<RewardTrainResult> {
  if (!model.config.valueHead) throw new Error('reward model: the model needs a value head (config.valueHead)');
  if (data.pairs.length === 0 && data.ratings.length === 0)
    throw new InputError('reward model: no ratings or preference pairs to train on');
  const rng = new Rng(o.seed ?? 0);
  const opt = new AdamW(model.variables(), { lr: o.lr ?? 1e-3, weightDecay: o.weightDecay ?? 0 });
  const bs = o.batchSize ?? 8;
  const rw = o.ratingWeight ?? (data.pairs.length ? 0.5 : 1);
  const rs = data.ratings.map((r) => r.rating);
  const lo = Math.min(...rs);
  const span = Math.max(...rs) - lo || 1;
  const losses: number[] = [];
  const val = o.validation?.length ? o.validation : undefined;
  const every = o.evalEvery ?? Math.max(10, Math.round(o.steps / 10));
  // The kept weights: the best validation accuracy, ties to the lower validation loss (a model
  // that ranks a handful of validation pairs right by chance at step 0 is not kept over a trained one).
  let best: { step: number; acc: number; loss: number; weights: Map<tf.Variable, tf.Tensor> } | undefined;
  const validate = async (step: number): Promise<void> => {
    const s = await pairScores(model, val!, o.padId);
    const acc = pairAccuracy(s.chosen, s.rejected);
    const loss = s.chosen.reduce((a, c, i) => a + softplus(s.rejected[i]! - c), 0) / s.chosen.length;
    o.onValidation?.(step, acc, loss);
    if (!best || acc > best.acc || (acc === best.acc && loss < best.loss)) {
      for (const w of best?.weights.values() ?? []) w.dispose();
      best = { step, acc, loss, weights: new Map(model.variables().map((v) => [v, tf.clone(v)])) };
    }
  };
  let stepsRun = 0;
  try {
    if (val) await validate(0);
    for (let step = 0; step < o.steps; step++) {
      const pairs = data.pairs.length
        ? Array.from({ length: Math.min(bs, data.pairs.length) }, () => rng.pick(data.pairs))
        : [];
      const rated =
        data.ratings.length && rw > 0
          ? Array.from({ length: Math.min(bs, data.ratings.length) }, () => rng.pick(data.ratings))
          : [];
      const pb = pairs.length
        ? scoreBatch(
            model,
            [...pairs.map((p) => [...p.prompt, ...p.chosen]), ...pairs.map((p) => [...p.prompt, ...p.rejected])],
            o.padId,
          )
        : undefined;
      const rb = rated.length
        ? scoreBatch(
            model,
            rated.map((r) => [...r.prompt, ...r.response]),
            o.padId,
          )
        : undefined;
      const { value, grads } = tf.variableGrads(() => {
        let loss = tf.scalar(0);
        if (pb) {
          const s = scoreTensor(model, pb);
          const diff = tf.sub(tf.slice(s, [0], [pairs.length]), tf.slice(s, [pairs.length], [pairs.length]));
          // -log sigmoid(d) = relu(-d) + log(1 + exp(-|d|)), written with plain ops (stable, and
          // tf.logSigmoid's custom gradient loses its input inside variableGrads here).
          const nll = tf.add(tf.relu(tf.neg(diff)), tf.log1p(tf.exp(tf.neg(tf.abs(diff)))));
          loss = tf.add(loss, tf.mean(nll));
        }
        if (rb) {
          const s = scoreTensor(model, rb);
          const target = tf.tensor1d(rated.map((r) => (r.rating - lo) / span));
          loss = tf.add(loss, tf.mul(tf.mean(tf.square(tf.sub(tf.sigmoid(s), target))), rw));
        }
        return loss as tf.Scalar;
      }, model.variables());
      if (pb) disposeBatch(pb);
      if (rb) disposeBatch(rb);
      const clipped = await clipByGlobalNorm(grads, o.gradClip ?? 1);
      opt.step(clipped.grads);
      losses.push((await value.data())[0]!);
      o.onStep?.(step + 1, losses.at(-1)!);
      value.dispose();
      for (const g of Object.values(grads)) g.dispose();
      for (const g of Object.values(clipped.grads)) if (!Object.values(grads).includes(g)) g.dispose();
      stepsRun = step + 1;
      if (val && (stepsRun % every === 0 || stepsRun === o.steps)) await validate(stepsRun);
    }
    // The best validation weights back in place (the model as it was at that step).
    if (best) for (const [v, w] of best.weights) v.assign(w);
  } finally {
    opt.dispose();
    for (const w of best?.weights.values() ?? []) w.dispose();
  }
  return {
    losses,
    pairs: data.pairs.length,
    ratings: data.ratings.length,
    stepsRun,
    ...(best ? { bestStep: best.step, validationAccuracy: best.acc } : {}),
  };
}
