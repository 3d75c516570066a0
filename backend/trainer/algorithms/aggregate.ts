// Loss aggregation: per-token values [B, T] and the action mask to one scalar.
//   token-mean              MS(x) / (n + 1e-8)                mean over every trained token of the batch
//   seq-mean-token-mean     (1/B) Σ_b MM_b(x)                 each sequence weighs the same
//   seq-mean-token-sum      (1/B) Σ_b MS_b(x)                 long sequences weigh more
//   seq-mean-token-sum-norm MS(x) / (T + 1e-8), T = padded length (Dr. GRPO style constant)
// All-masked rows count in B and contribute 0; an all-masked batch gives 0.
import { InputError } from '../../core/errors.js';
import { tf } from '../../model/engine.js';
import { AGG_MODES, type AggMode } from './types.js';
import { maskedMean, maskedSum } from './masked.js';

export function assertAggMode(mode: string): asserts mode is AggMode {
  if (!(AGG_MODES as readonly string[]).includes(mode)) {
    throw new InputError(`unknown loss_agg_mode '${mode}'; known: ${AGG_MODES.join(', ')}`);
  }
}

/**
 * `rows` is the number of sequences a seq-mean divides by (default: B). Callers that zeroed some rows
 * out of `mask` (MIX's usual / expert parts) pass the number of rows that remain.
 */
export function aggregate(x: tf.Tensor2D, mask: tf.Tensor2D, mode: AggMode, rows?: number | tf.Scalar): tf.Scalar {
  assertAggMode(mode);
  const B = x.shape[0];
  const T = x.shape[1];
  const nRows = rows === undefined ? B : rows;
  // A zero row count only happens with every row masked, where the sum is 0 as well.
  const safeRows = typeof nRows === 'number' ? Math.max(nRows, 1) : tf.maximum(nRows, 1);
  switch (mode) {
    case 'token-mean':
      return maskedMean(x, mask) as tf.Scalar;
    case 'seq-mean-token-mean':
      return tf.div(tf.sum(maskedMean(x, mask, 1)), safeRows) as tf.Scalar;
    case 'seq-mean-token-sum':
      return tf.div(tf.sum(maskedSum(x, mask, 1)), safeRows) as tf.Scalar;
    case 'seq-mean-token-sum-norm':
      return tf.div(maskedSum(x, mask), T + 1e-8) as tf.Scalar;
  }
}
