// PPO's critic update inside a trainer step (trainer.ts trainStep): one regression step of the value
// model toward the returns on a micro-batch, with its own optimiser and gradient clip.
import type { Experience } from '../core/types.js';
import { tf } from '../model/engine.js';
import { type AdamW, clipByGlobalNorm } from '../model/optim.js';
import type { Transformer } from '../model/transformer.js';
import type { TrainBatch } from './batch.js';

/**
 * Critic regression towards the returns on action positions (value of the prefix before each token).
 * Returns this micro-batch's share of the step's value loss (mean squared error, weighted by its rows),
 * reported as `critic_loss` (measured before this update, like `loss`).
 */
export async function criticStep(
  critic: Transformer,
  criticOpt: AdamW,
  gradClip: number | undefined,
  micro: Experience[],
  batch: TrainBatch,
  weight: number,
  patches?: tf.Tensor3D,
): Promise<number> {
  const { value, grads } = tf.variableGrads(() => {
    // Hidden states only: the value head never needs the [B, T, V] logits.
    const out = critic.hiddenStates(batch.ids, {
      attentionMask: batch.attentionMask,
      prefix: patches && critic.embedPatches(patches),
    });
    const L = batch.length;
    // Token positions follow the image prefix (P = 0 without one).
    const P = out.hidden.shape[1] - L;
    const v = tf.slice(critic.values(out.hidden), [0, P], [micro.length, L - 1]);
    const err = tf.mul(tf.square(tf.sub(v, batch.returns)), batch.actionMask);
    return tf.mul(tf.div(tf.sum(err), tf.maximum(tf.sum(batch.actionMask), 1)), weight) as tf.Scalar;
  }, critic.variables());
  const loss = (await value.data())[0]!;
  const c = await clipByGlobalNorm(grads, gradClip ?? 1.0);
  criticOpt.step(c.grads);
  tf.dispose([value, ...Object.values(c.grads)]);
  return loss;
}
