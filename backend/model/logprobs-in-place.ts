// The native in-place path of the chunked head log-probs (logprobs.ts `headLogprobs` without entropy):
// one reused logits buffer and in-place writes of every chunk's results, on the wasm heap.
import { tf } from './engine.js';
import { nativeOpsAvailable } from './native-ops.js';
import { nativeAddon } from './native-blas.js';
import { heap, offsetOf, outputTensor } from './native-heap.js';
import type { Head } from './logprobs.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/** Whether the in-place native path can run: the wasm heap with the addon's pointwise ops and sgemmExt. */
export function inPlaceAvailable(): boolean {
  return nativeOpsAvailable() && typeof nativeAddon()?.sgemmExt === 'function' && tf.getBackend() === 'wasm';
}

/**
 * headLogprobs without entropy, on the native addon, with no allocation per chunk: one [rows, V]
 * logits buffer (and one for its gradient) is reused by every chunk, and each chunk's results are
 * written in place into the [N] output, the [N, D] input gradient and the head's gradient. Freeing
 * and allocating [rows, V] blocks between small tensors fragmented the wasm heap (it grew to about
 * twice the live tensors at V = 151,669), which a reused buffer avoids.
 */
export function headLogprobsInPlace(
  head: Head,
  h: tf.Tensor2D,
  t: tf.Tensor1D,
  V: number,
  inv: number,
  rows: number,
  trains: boolean,
): tf.Tensor1D {
  const [N, D] = h.shape;
  const addon = nativeAddon()!;
  const gemm = addon.sgemmExt!;
  const vocabFirst = 'external' in head || head.vocabFirst;
  // C [n, *] = alpha * op(A) op(W) where W is the head (in the heap or outside it).
  const withHead = (
    aOff: number,
    cOff: number,
    transW: boolean,
    w: tf.Tensor | undefined,
    M: number,
    Nn: number,
    K: number,
  ) => {
    const hp = heap();
    if ('external' in head) {
      const d = head.external.data;
      gemm(hp, aOff, d.buffer as ArrayBuffer, d.byteOffset, hp, cOff, M, Nn, K, 0, transW ? 1 : 0, inv, 0);
    } else gemm(hp, aOff, hp, offsetOf(w ?? head.heap), hp, cOff, M, Nn, K, 0, transW ? 1 : 0, inv, 0);
  };
  // logits of rows [r0, r0 + n) into z: h W^T for a [V, D] head, h W for lm_head [D, V].
  const logitsInto = (hs: tf.Tensor, w: tf.Tensor | undefined, z: tf.Tensor, r0: number, n: number) =>
    withHead(offsetOf(hs) + r0 * D * 4, offsetOf(z), vocabFirst, w, n, V, D);
  const logp = (z: tf.Tensor, out: tf.Tensor, r0: number, n: number) =>
    addon.pointwise!(
      heap(),
      4,
      Float64Array.from([offsetOf(z), offsetOf(t) + r0 * 4, offsetOf(out) + r0 * 4]),
      Int32Array.from([n, V]),
      0,
    );

  const f = tf.customGrad(((...args: unknown[]) => {
    const hs = args[0] as tf.Tensor2D;
    const w = trains ? (args[1] as tf.Tensor2D) : undefined;
    const save = args[trains ? 2 : 1] as tf.GradSaveFunc;
    const out = outputTensor([N]);
    const z = outputTensor([Math.min(rows, N), V]);
    for (let r0 = 0; r0 < N; r0 += rows) {
      const n = Math.min(rows, N - r0);
      logitsInto(hs, w, z, r0, n);
      logp(z, out, r0, n);
    }
    z.dispose();
    // The targets are saved too: a caller's tidy may dispose them before the backward pass runs,
    // and their heap memory would then be reused under the gradient.
    save(trains ? [hs, w!, t] : [hs, t]);
    return {
      value: out,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const hsv = saved[0] as tf.Tensor2D;
        const wv = trains ? (saved[1] as tf.Tensor2D) : undefined;
        const ts = saved[trains ? 2 : 1]!;
        const d = dy.dtype === 'float32' ? dy : tf.cast(dy, 'float32');
        const dh = outputTensor([N, D]);
        const dW = wv ? outputTensor(wv.shape) : undefined;
        const zb = outputTensor([Math.min(rows, N), V]);
        const dz = outputTensor([Math.min(rows, N), V]);
        for (let r0 = 0; r0 < N; r0 += rows) {
          const n = Math.min(rows, N - r0);
          // This chunk's logits again (nothing of size [N, V] was kept), then dz = dy (onehot - softmax).
          logitsInto(hsv, wv, zb, r0, n);
          addon.pointwise!(
            heap(),
            5,
            Float64Array.from([offsetOf(zb), offsetOf(ts) + r0 * 4, offsetOf(d) + r0 * 4, offsetOf(dz)]),
            Int32Array.from([n, V]),
            0,
          );
          // dh rows = inv dz W ([V, D] head) or inv dz W^T (lm_head [D, V]); the 1 / temperature is alpha.
          withHead(offsetOf(dz), offsetOf(dh) + r0 * D * 4, !vocabFirst, wv, n, D, V);
          if (dW) {
            const hp = heap();
            const hOff = offsetOf(hsv) + r0 * D * 4;
            // [V, D] += inv dz^T h, or [D, V] += inv h^T dz; the first chunk overwrites (beta 0).
            if (vocabFirst) gemm(hp, offsetOf(dz), hp, hOff, hp, offsetOf(dW), V, D, n, 1, 0, inv, r0 === 0 ? 0 : 1);
            else gemm(hp, hOff, hp, offsetOf(dz), hp, offsetOf(dW), D, V, n, 1, 0, inv, r0 === 0 ? 0 : 1);
          }
        }
        zb.dispose();
        dz.dispose();
        return dW ? [dh, dW] : [dh];
      },
    };
  }) as unknown as CustomGradFn);
  return (trains ? f(h, (head as { heap: tf.Tensor2D }).heap) : f(h)) as tf.Tensor1D;
}
