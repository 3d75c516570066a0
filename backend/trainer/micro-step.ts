// One micro-batch of a trainer step (trainer.ts trainStep): the critic's step, the reference's
// log-probs (and the collapse guard's KL to it), the algorithm's loss and its gradients over the
// actor, added to the step's running sums; the update-KL probe's log-probs are taken from the same
// pass. The optimiser step over the accumulated gradients stays with the trainer.
import type { Experience } from '../core/types.js';
import { tf, tidy } from '../model/engine.js';
import { tokenLogprobs } from '../model/logprobs.js';
import type { AdamW } from '../model/optim.js';
import type { Transformer } from '../model/transformer.js';
import { buildBatch, disposeBatch, responseValues, type TrainBatch } from './batch.js';
import { criticStep } from './critic-step.js';
import { batchPatches } from './images.js';
import type { Objective } from './objective.js';
import { accumulate, usualLogRatio } from './step-parts.js';

/** What a micro-batch needs of the trainer (its models, optimiser of the critic, algorithm and options). */
export interface MicroStepTrainer {
  readonly actor: Transformer;
  readonly objective: Objective;
  readonly opts: { padId: number; temperature?: number; gradClip?: number };
  readonly reference?: Transformer;
  readonly critic?: Transformer;
  readonly criticOptimizer?: AdamW;
  readonly step: number;
}

/** The step's running sums over its micro-batches. */
export interface StepSums {
  sums: Record<string, number>;
  /** KL to the reference of the policy that sampled (k1 over the usual rows' trained tokens): the collapse guard's signal. */
  refKl: { sum: number; tokens: number };
  grads: Record<string, tf.Tensor>;
  tokens: number;
  tGrad: number;
}

export function emptySums(): StepSums {
  return { sums: {}, refKl: { sum: 0, tokens: 0 }, grads: {}, tokens: 0, tGrad: 0 };
}

/** Log-probs of the batch's tokens under `model`, outside any gradient tape: [B, L-1]. */
export function logprobsNoGrad(
  model: Transformer,
  batch: TrainBatch,
  temperature: number | undefined,
  patches?: tf.Tensor3D,
): tf.Tensor2D {
  return tidy(
    () =>
      tokenLogprobs(model, batch.ids, {
        attentionMask: batch.attentionMask,
        temperature,
        prefix: patches && model.embedPatches(patches),
      }).logprobs,
  );
}

/**
 * Runs MICRO (WEIGHT: its share of the batch) and adds to ACC; its first IN_PROBE rows are probe
 * rows whose log-probs before the step are pushed onto BEFORE.
 */
export async function microStep(
  t: MicroStepTrainer,
  micro: Experience[],
  weight: number,
  inProbe: number,
  before: number[][],
  acc: StepSums,
): Promise<void> {
  const { sums, refKl } = acc;
  const batch = buildBatch(micro, t.opts.padId);
  acc.tokens += batch.tokens;
  // Vision rows: the patch rows are made here, outside the tape (the gradient reads them later).
  let patches: tf.Tensor3D | undefined;
  try {
    patches = batchPatches(t.actor, micro);
    if (t.critic)
      sums.critic_loss =
        (sums.critic_loss ?? 0) +
        (await criticStep(t.critic, t.criticOptimizer!, t.opts.gradClip, micro, batch, weight, patches));
    const refLogprob = t.reference ? logprobsNoGrad(t.reference, batch, t.opts.temperature, patches) : undefined;
    if (refLogprob) {
      const [sum, n] = await usualLogRatio(micro, batch, refLogprob);
      refKl.sum += sum;
      refKl.tokens += n;
    }
    if (t.objective.recomputeOldLogprobs) {
      const old = logprobsNoGrad(t.actor, batch, t.opts.temperature, patches);
      batch.oldLogprob.dispose();
      batch.oldLogprob = old;
    }
    const g0 = performance.now();
    const { value, grads: g, kept, probeLp } = lossGrads(t, batch, refLogprob, patches, weight, inProbe);
    if (probeLp) {
      const data = (await probeLp.data()) as Float32Array;
      probeLp.dispose();
      before.push(...responseValues(micro.slice(0, inProbe), data, batch.length - 1));
    }
    acc.tGrad += (performance.now() - g0) / 1000;
    sums.loss = (sums.loss ?? 0) + (await value.data())[0]!;
    value.dispose();
    for (const [k, v] of Object.entries(kept)) {
      const x = typeof v === 'number' ? v : (await v.data())[0]!;
      if (typeof v !== 'number') v.dispose();
      sums[k] = (sums[k] ?? 0) + x * weight;
    }
    acc.grads = accumulate(acc.grads, g);
    refLogprob?.dispose();
  } finally {
    disposeBatch(batch);
    patches?.dispose();
  }
}

/** The weighted loss and its gradients over the actor; the loss's metrics and the probe rows' log-probs are kept. */
function lossGrads(
  t: MicroStepTrainer,
  batch: TrainBatch,
  refLogprob: tf.Tensor2D | undefined,
  patches: tf.Tensor3D | undefined,
  weight: number,
  inProbe: number,
) {
  const kept: Record<string, tf.Scalar | number> = {};
  let probeLp: tf.Tensor | undefined;
  const { value, grads } = tf.variableGrads(() => {
    const lp = tokenLogprobs(t.actor, batch.ids, {
      attentionMask: batch.attentionMask,
      temperature: t.opts.temperature,
      withEntropy: t.objective.needsEntropy,
      prefix: patches && t.actor.embedPatches(patches),
      train: true,
    });
    const out = t.objective.loss({
      logprob: lp.logprobs,
      oldLogprob: batch.oldLogprob,
      refLogprob,
      advantages: batch.advantages,
      actionMask: batch.actionMask,
      expertMask: batch.expertMask,
      entropy: lp.entropy,
      step: t.step,
    });
    for (const [k, v] of Object.entries(out.metrics)) kept[k] = typeof v === 'number' ? v : tf.keep(v);
    if (inProbe > 0 && !t.actor.lora?.dropout) probeLp = tf.keep(tf.slice(lp.logprobs, 0, inProbe));
    return tf.mul(out.loss, weight) as tf.Scalar;
  }, t.actor.variables());
  return { value, grads, kept, probeLp: probeLp as tf.Tensor | undefined };
}
