// Masked tensor helpers. Masking uses tf.where (not multiplication) so a NaN/inf at a masked position
// contributes exactly 0, forward and backward; `noGrad` computes values (clip conditions, phi weights)
// that must not be differentiated, which also keeps comparison ops (no gradient on wasm) off the tape.
import { tf } from '../../model/engine.js';

/** Boolean mask from a float 0/1 mask (a constant input: never on the differentiated path). */
export function maskBool(mask: tf.Tensor): tf.Tensor {
  return tf.greater(mask, 0);
}

/** x where mask is set, exactly 0 elsewhere. */
export function fillMasked<T extends tf.Tensor>(x: T, mask: tf.Tensor): T {
  const cond = mask.dtype === 'bool' ? mask : maskBool(mask);
  return tf.where(cond, x, tf.zerosLike(x)) as T;
}

/** Σ m·x over all positions (axis undefined) or along `axis`; masked positions contribute 0. */
export function maskedSum(x: tf.Tensor, mask: tf.Tensor, axis?: number): tf.Tensor {
  return tf.sum(fillMasked(x, mask), axis);
}

/** MS(x) / (Σ m + 1e-8): 0 (not NaN) when everything is masked. */
export function maskedMean(x: tf.Tensor, mask: tf.Tensor, axis?: number): tf.Tensor {
  return tf.div(maskedSum(x, mask, axis), tf.add(tf.sum(mask, axis), 1e-8));
}

/** Row mask [B] broadcast over tokens: actionMask [B, T] with the rows outside `rows` zeroed. */
export function restrictRows(actionMask: tf.Tensor2D, rows: tf.Tensor1D): tf.Tensor2D {
  return tf.mul(actionMask, tf.expandDims(rows, 1)) as tf.Tensor2D;
}

/**
 * Evaluate `f` on the inputs without recording it for gradients (stop-gradient): the result is a
 * constant to the tape, its inputs get zero gradient. Ops inside run in a kernel scope, so comparisons
 * there never need a gradient function.
 */
export function noGrad<T extends tf.Tensor>(f: (...xs: tf.Tensor[]) => T, ...inputs: tf.Tensor[]): T {
  const g = tf.customGrad((...args: unknown[]) => {
    const xs = args.slice(0, inputs.length) as tf.Tensor[];
    return { value: f(...xs), gradFunc: (_dy: tf.Tensor | tf.Tensor[]) => xs.map((x) => tf.zerosLike(x)) };
  });
  return (g as unknown as (...xs: tf.Tensor[]) => T)(...inputs);
}

/** Float 0/1 row mask [B] read as host numbers (small): counts and presence of per-part metrics. */
export function rowFlags(mask: tf.Tensor1D): boolean[] {
  return Array.from(mask.dataSync(), (v) => v > 0.5);
}

/** Give every tensor in `metrics` its own handle (and none the loss's), so callers may keep/dispose each once. */
export function distinctMetrics(
  loss: tf.Tensor,
  metrics: Record<string, tf.Scalar | number>,
): Record<string, tf.Scalar | number> {
  const seen = new Set<number>([loss.id]);
  const out: Record<string, tf.Scalar | number> = {};
  for (const [k, v] of Object.entries(metrics)) {
    if (typeof v === 'number') out[k] = v;
    else if (seen.has(v.id)) out[k] = tf.clone(v);
    else {
      seen.add(v.id);
      out[k] = v;
    }
  }
  return out;
}
