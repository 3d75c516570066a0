// What the trainer loop asks of an algorithm: a differentiable loss over one micro-batch.
import type { tf } from '../model/engine.js';
import type { Experience } from '../core/types.js';

export interface LossInputs {
  /** Current policy log-probs at next-token positions [B, T]. */
  logprob: tf.Tensor2D;
  oldLogprob: tf.Tensor2D;
  refLogprob?: tf.Tensor2D;
  advantages: tf.Tensor2D;
  actionMask: tf.Tensor2D;
  expertMask: tf.Tensor1D;
  /** Per-position entropy of the policy [B, T] (when the objective asks for it). */
  entropy?: tf.Tensor2D;
  /** Trainer step, for scheduled coefficients (CHORD's mu). */
  step: number;
}

export interface LossOutput {
  loss: tf.Scalar;
  /** Logged values; tensors are read after the step. */
  metrics: Record<string, tf.Scalar | number>;
}

export interface Objective {
  name: string;
  needsReference: boolean;
  needsCritic: boolean;
  needsEntropy: boolean;
  /** Compute (recompute) old log-probs from the current weights before the update (e.g. expert rows with none). */
  recomputeOldLogprobs: boolean;
  /**
   * Rows come in (chosen, rejected) pairs (DPO): the trainer keeps a pair whole when it skips a row
   * and never splits one across micro-batches.
   */
  pairedRows?: boolean;
  /**
   * Advantages that need the critic (GAE): called by the trainer before the update with the critic's
   * value of every response position; fills `advantages` and `returns` of the usual rows in place.
   */
  computeAdvantages?(exps: Experience[], values: number[][]): void;
  /**
   * KL as a reward penalty: given the reference log-prob of every response token, lower the rewards
   * of the usual rows by kl_coef x kl and recompute their advantages (before the update).
   */
  applyRewardPenalty?(exps: Experience[], refLogprobs: number[][]): { meanKl: number };
  loss(inputs: LossInputs): LossOutput;
}
