// Shared types of the algorithm units: loss-aggregation modes, the uniform policy-loss call
// signature, and what every differentiable unit returns.
import type { tf } from '../../model/engine.js';

/** How per-token losses become one scalar (see aggregate.ts). */
export type AggMode = 'token-mean' | 'seq-mean-token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-sum-norm';
export const AGG_MODES: readonly AggMode[] = [
  'token-mean',
  'seq-mean-token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-sum-norm',
];

/**
 * Tensors of one micro-batch, every per-token tensor [B, T] over the same positions.
 * `actionMask` is float 0/1; masked positions may hold anything (NaN, inf): they contribute exactly 0.
 */
export interface PolicyLossInputs {
  /** Current policy log-probs (the differentiated input). */
  logprob: tf.Tensor2D;
  /** Behaviour (or recomputed old) log-probs. */
  oldLogprob?: tf.Tensor2D;
  /** Reference-model log-probs (DPO, KL). */
  refLogprob?: tf.Tensor2D;
  advantages?: tf.Tensor2D;
  actionMask: tf.Tensor2D;
  /** [B] float 0/1, 1 = expert (SFT) row. */
  expertMask?: tf.Tensor1D;
  /** Trainer step (scheduled coefficients such as CHORD's mu). */
  step?: number;
}

export interface LossResult {
  loss: tf.Scalar;
  /** Logged scalars; every tensor entry is a distinct tensor (safe to keep and dispose one by one). */
  metrics: Record<string, tf.Scalar | number>;
  /** Non-scalar diagnostics (per-token ratio, per-row KL...); intermediate, disposed with the tape. */
  details?: Record<string, tf.Tensor>;
}

export type PolicyInputName = 'oldLogprob' | 'refLogprob' | 'advantages' | 'expertMask';

/** A policy loss: a named unit with its defaults and the one call signature the trainer uses. */
export interface PolicyLossFn<P extends object = object> {
  name: string;
  description: string;
  defaults: P;
  /** Inputs beyond logprob and actionMask that must be present. */
  requires: readonly PolicyInputName[];
  compute(inputs: PolicyLossInputs, params?: Partial<P>): LossResult;
}
