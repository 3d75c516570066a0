// Causal self-attention as one native op with a hand-written gradient (native/rft_blas.c
// `attention`): scores, masks, softmax and the value product run on the projections' own layout
// [B, T, heads, hd], so no transposes, no [B, H, T, T] bias tensor and no separate softmax kernels.
// Used for forward passes without a KV cache (training, log-probs, prefill) when the addon is active.
import * as tf from '@tensorflow/tfjs-core';
import { nativeAddon, nativeBlasActive } from './native-blas.js';
import { heap, offsetOf as offset, outputTensor as output } from './native-heap.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

export function nativeAttentionAvailable(): boolean {
  return (
    nativeBlasActive() && typeof nativeAddon()?.attention === 'function' && process.env.RFT_NATIVE_ATTENTION !== '0'
  );
}

/**
 * softmax(q k^T / sqrt(hd) + causal and padding masks) v for q [B, T, H, hd], k and v [B, T, KV, hd],
 * keyMask [B, T] (1 real, 0 padding). Returns [B, T, H, hd]. Rows with no visible key are zero.
 */
export function nativeAttention(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, keyMask: tf.Tensor2D): tf.Tensor4D {
  const [B, T, H, hd] = q.shape;
  const KV = k.shape[2];
  const dims = Int32Array.from([B, T, H, KV, hd]);
  const scale = 1 / Math.sqrt(hd);
  const addon = nativeAddon()!;
  // Contiguous float32 inputs (a cast or reshape of a wasm tensor shares or makes one).
  const mask = keyMask.dtype === 'float32' ? keyMask : tf.cast(keyMask, 'float32');
  const f = tf.customGrad(((qi: tf.Tensor, ki: tf.Tensor, vi: tf.Tensor, save: tf.GradSaveFunc) => {
    const out = output([B, T, H, hd]);
    const probs = output([B, H, T, T]);
    addon.attention!(
      heap(),
      1,
      Float64Array.from([offset(qi), offset(ki), offset(vi), offset(mask), offset(out), offset(probs)]),
      dims,
      scale,
    );
    save([qi, ki, vi, probs]);
    return {
      value: out,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [qs, ks, vs, ps] = saved as [tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor];
        // dy may be a broadcast or non-float view in principle; make it a plain float32 tensor.
        const d = dy.dtype === 'float32' ? dy : tf.cast(dy, 'float32');
        const dq = output([B, T, H, hd]);
        const dk = output([B, T, KV, hd]);
        const dv = output([B, T, KV, hd]);
        addon.attention!(
          heap(),
          0,
          Float64Array.from([
            offset(qs),
            offset(ks),
            offset(vs),
            offset(ps),
            offset(d),
            offset(dq),
            offset(dk),
            offset(dv),
          ]),
          dims,
          scale,
        );
        return [dq, dk, dv];
      },
    };
  }) as unknown as CustomGradFn);
  return f(q, k, v) as tf.Tensor4D;
}
