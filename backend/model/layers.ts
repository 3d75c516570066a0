// Building blocks with hand-written gradients that issue only plain 2-D matmuls: on the wasm
// backend a plain matmul takes the fast XNNPACK path, while transposed or batched matmuls fall to a
// slow loop, and the gradient of tf.gather is not registered at all.
import { tf } from './engine.js';
import { nativeBlasActive } from './native-blas.js';
import {
  embedNative,
  nativeOpsAvailable,
  nativeRopeAvailable,
  rmsNormNative,
  ropeNative,
  swigluNative,
} from './native-ops.js';
import { fusedOps } from './fused-ops.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/**
 * y = x @ w for x [N, in], w [in, out]; gradients dx = dy @ w^T, dw = x^T @ dy. With the native
 * BLAS the transposes are sgemm flags; on plain wasm they are explicit (its transposed matmul is slow).
 */
export function linear2d(x: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  if (isFrozen(w)) return frozenLinear2d(x, w, false);
  const f = tf.customGrad(((xi: tf.Tensor, wi: tf.Tensor, save: tf.GradSaveFunc) => {
    save([xi, wi]);
    return {
      value: tf.matMul(xi as tf.Tensor2D, wi as tf.Tensor2D),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [xs, ws] = saved as [tf.Tensor2D, tf.Tensor2D];
        const d = dy as tf.Tensor2D;
        if (nativeBlasActive()) return [tf.matMul(d, ws, false, true), tf.matMul(xs, d, true, false)];
        return [tf.matMul(d, tf.transpose(ws)), tf.matMul(tf.transpose(xs), d)];
      },
    };
  }) as unknown as CustomGradFn);
  return f(x, w) as tf.Tensor2D;
}

/** y = x @ w^T for x [N, in], w [out, in] (the tied output projection reads the embedding table as is). */
export function linear2dT(x: tf.Tensor2D, w: tf.Tensor2D): tf.Tensor2D {
  if (isFrozen(w)) return frozenLinear2d(x, w, true);
  if (!nativeBlasActive()) return linear2d(x, tf.transpose(w));
  const f = tf.customGrad(((xi: tf.Tensor, wi: tf.Tensor, save: tf.GradSaveFunc) => {
    save([xi, wi]);
    return {
      value: tf.matMul(xi as tf.Tensor2D, wi as tf.Tensor2D, false, true),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [xs, ws] = saved as [tf.Tensor2D, tf.Tensor2D];
        const d = dy as tf.Tensor2D;
        // dx = dy @ w, dw = dy^T @ x
        return [tf.matMul(d, ws), tf.matMul(d, xs, true, false)];
      },
    };
  }) as unknown as CustomGradFn);
  return f(x, w) as tf.Tensor2D;
}

/** A weight that takes no gradient (LoRA's frozen base): a non-trainable variable. */
function isFrozen(w: tf.Tensor): boolean {
  return w instanceof tf.Variable && !w.trainable;
}

/**
 * y = x @ w (or x @ w^T) for a frozen w: w is closed over, not an input of the op, so the backward
 * pass computes only dx and never the (as large as full fine-tuning) weight gradient.
 */
function frozenLinear2d(x: tf.Tensor2D, w: tf.Tensor2D, transposeW: boolean): tf.Tensor2D {
  const f = tf.customGrad(((xi: tf.Tensor) => ({
    // Plain wasm's transposed matmul is slow: transpose explicitly there.
    value:
      transposeW && !nativeBlasActive()
        ? tf.matMul(xi as tf.Tensor2D, tf.transpose(w))
        : tf.matMul(xi as tf.Tensor2D, w, false, transposeW),
    gradFunc: (dy: tf.Tensor) => {
      const d = dy as tf.Tensor2D;
      if (transposeW) return [tf.matMul(d, w)];
      if (nativeBlasActive()) return [tf.matMul(d, w, false, true)];
      return [tf.matMul(d, tf.transpose(w))];
    },
  })) as unknown as CustomGradFn);
  return f(x) as tf.Tensor2D;
}

/** Linear over the last axis of any-rank x: [..., in] @ [in, out] -> [..., out]. */
export function linear(x: tf.Tensor, w: tf.Tensor2D): tf.Tensor {
  const inDim = x.shape[x.shape.length - 1]!;
  const lead = x.shape.slice(0, -1);
  const y = linear2d(tf.reshape(x, [-1, inDim]) as tf.Tensor2D, w);
  return tf.reshape(y, [...lead, w.shape[1]]);
}

/**
 * Token embedding lookup: forward with gather (fast), backward with a one-hot matmul
 * (dE = onehot(ids)^T @ dy), because the gather gradient is missing on wasm.
 */
export function embed(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  if (nativeOpsAvailable()) return embedNative(table, ids);
  const vocab = table.shape[0];
  const f = tf.customGrad(((t: tf.Tensor) => ({
    value: tf.gather(t as tf.Tensor2D, ids),
    gradFunc: (dy: tf.Tensor) => {
      // Cast the int one-hot: a float32 oneHot returns garbage on wasm.
      const oh = tf.cast(tf.oneHot(ids, vocab), 'float32') as tf.Tensor2D;
      if (nativeBlasActive()) return [tf.matMul(oh, dy as tf.Tensor2D, true, false)];
      return [tf.matMul(tf.transpose(oh), dy as tf.Tensor2D)];
    },
  })) as unknown as CustomGradFn);
  return f(table) as tf.Tensor2D;
}

/** RMSNorm over the last axis: x / sqrt(mean(x^2) + eps) * w. */
export function rmsNorm(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor {
  if (nativeOpsAvailable()) return rmsNormNative(x, w, eps);
  const fused = fusedOps().rmsNorm;
  if (fused) return fused(x, w, eps);
  const ms = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, eps))), w);
}

export function silu(x: tf.Tensor): tf.Tensor {
  return tf.mul(x, tf.sigmoid(x));
}

/** SwiGLU's gating: silu(gate) * up (one fused op with the native addon). */
export function swiglu(gate: tf.Tensor, up: tf.Tensor): tf.Tensor {
  if (nativeOpsAvailable()) return swigluNative(gate, up);
  const fused = fusedOps().swiglu;
  if (fused) return fused(gate, up);
  return tf.mul(silu(gate), up);
}

export interface RopeScaling {
  type: 'llama3';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositionEmbeddings: number;
}

/** Rotary inverse frequencies theta^(-2i/d), with Llama-3's scaling (transformers' _compute_llama3_parameters). */
export function ropeFrequencies(headDim: number, theta: number, scaling?: RopeScaling): Float64Array {
  const half = headDim / 2;
  const out = new Float64Array(half);
  for (let i = 0; i < half; i++) out[i] = 1 / Math.pow(theta, (2 * i) / headDim);
  if (scaling) {
    const { factor, lowFreqFactor: lo, highFreqFactor: hi, originalMaxPositionEmbeddings: old } = scaling;
    const lowWavelen = old / lo;
    const highWavelen = old / hi;
    for (let i = 0; i < half; i++) {
      const f = out[i]!;
      const wavelen = (2 * Math.PI) / f;
      if (wavelen < highWavelen) continue;
      if (wavelen > lowWavelen) out[i] = f / factor;
      else {
        const smooth = (old / wavelen - lo) / (hi - lo);
        out[i] = ((1 - smooth) * f) / factor + smooth * f;
      }
    }
  }
  return out;
}

/** Rotary tables in Hugging Face's rotate-half layout: cos/sin [maxLen, headDim]. */
export function ropeTables(
  maxLen: number,
  headDim: number,
  theta: number,
  scaling?: RopeScaling,
): { cos: tf.Tensor2D; sin: tf.Tensor2D; rot: tf.Tensor2D } {
  const half = headDim / 2;
  const cos = new Float32Array(maxLen * headDim);
  const sin = new Float32Array(maxLen * headDim);
  const freqs = ropeFrequencies(headDim, theta, scaling);
  for (let p = 0; p < maxLen; p++) {
    for (let i = 0; i < half; i++) {
      const a = p * freqs[i]!;
      cos[p * headDim + i] = cos[p * headDim + i + half] = Math.cos(a);
      sin[p * headDim + i] = sin[p * headDim + i + half] = Math.sin(a);
    }
  }
  // rotate_half(x) = [-x2, x1] expressed as x @ rot, so it is one plain matmul with a cheap gradient.
  const rot = new Float32Array(headDim * headDim);
  for (let i = 0; i < half; i++) {
    rot[(i + half) * headDim + i] = -1; // out[i] = -x[i+half]
    rot[i * headDim + i + half] = 1; // out[i+half] = x[i]
  }
  return {
    cos: tf.tensor2d(cos, [maxLen, headDim]),
    sin: tf.tensor2d(sin, [maxLen, headDim]),
    rot: tf.tensor2d(rot, [headDim, headDim]),
  };
}

/** Rotary embeddings for x [B, T, heads, hd] (sequence before heads) at positions start..start+T-1. */
export function applyRopeSeqFirst(
  x: tf.Tensor4D,
  cos: tf.Tensor2D,
  sin: tf.Tensor2D,
  rot: tf.Tensor2D,
  start: number,
): tf.Tensor4D {
  return rope(x, cos, sin, rot, start, 1);
}

/** Apply rotary embeddings to x [B, H, T, hd] at positions start..start+T-1. */
export function applyRope(
  x: tf.Tensor4D,
  cos: tf.Tensor2D,
  sin: tf.Tensor2D,
  rot: tf.Tensor2D,
  start: number,
): tf.Tensor4D {
  return rope(x, cos, sin, rot, start, 2);
}

/** Both layouts: the positions checked against the tables once, then the native op, the engine's fused kernel, or tfjs. */
function rope(
  x: tf.Tensor4D,
  cos: tf.Tensor2D,
  sin: tf.Tensor2D,
  rot: tf.Tensor2D,
  start: number,
  posAxis: 1 | 2,
): tf.Tensor4D {
  const T = x.shape[posAxis];
  const hd = x.shape[3];
  if (start + T > cos.shape[0])
    throw new RangeError(`rotary embeddings: positions up to ${start + T} past the table's ${cos.shape[0]}`);
  if (nativeRopeAvailable()) return ropeNative(x, cos, sin, start, posAxis);
  const fused = fusedOps().rope;
  if (fused) return fused(x, cos, sin, start, posAxis);
  // The tables' rows broadcast over the heads: [T, 1, hd] when heads follow the positions.
  const shape = posAxis === 1 ? [T, 1, hd] : [T, hd];
  const c = tf.reshape(tf.slice(cos, [start, 0], [T, hd]), shape);
  const s = tf.reshape(tf.slice(sin, [start, 0], [T, hd]), shape);
  return tf.add(tf.mul(x, c), tf.mul(linear(x, rot), s)) as tf.Tensor4D;
}
