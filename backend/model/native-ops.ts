// Embedding lookup, RMSNorm, SwiGLU and the target-token log-prob as single native ops with hand-written gradients
// (native/rft_blas.c `pointwise`): each replaces 5-12 tfjs kernels (and their gradient kernels)
// over the largest activations of a training step. Active with the native addon; the callers
// fall back to the tfjs compositions in layers.ts / logprobs.ts otherwise.
import * as tf from '@tensorflow/tfjs-core';
import { nativeAddon, nativeBlasActive } from './native-blas.js';
import { heap, offsetOf, outputTensor } from './native-heap.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];
const OP = { RMS_F: 0, RMS_B: 1, SWIGLU_F: 2, SWIGLU_B: 3, LOGP_F: 4, LOGP_B: 5, EMBED_F: 6, EMBED_B: 7 } as const;

export function nativeOpsAvailable(): boolean {
  return nativeBlasActive() && typeof nativeAddon()?.pointwise === 'function' && process.env.RFT_NATIVE_OPS !== '0';
}

function run(op: number, tensors: tf.Tensor[], rows: number, cols: number, scalar = 0): void {
  const offs = Float64Array.from(tensors.map(offsetOf));
  nativeAddon()!.pointwise!(heap(), op, offs, Int32Array.from([rows, cols]), scalar);
}

/** x / sqrt(mean(x^2, -1) + eps) * w over the last axis of x. */
export function rmsNormNative(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor {
  const D = x.shape[x.shape.length - 1]!;
  const rows = x.size / D;
  const f = tf.customGrad(((xi: tf.Tensor, wi: tf.Tensor, save: tf.GradSaveFunc) => {
    const y = outputTensor(xi.shape);
    run(OP.RMS_F, [xi, wi, y], rows, D, eps);
    save([xi, wi]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [xs, ws] = saved as [tf.Tensor, tf.Tensor];
        const dx = outputTensor(xs.shape);
        const dw = outputTensor([D]);
        run(OP.RMS_B, [xs, ws, dy, dx, dw], rows, D, eps);
        return [dx, dw];
      },
    };
  }) as unknown as CustomGradFn);
  return f(x, w) as tf.Tensor;
}

/** silu(g) * u, elementwise, for g and u of the same shape. */
export function swigluNative(g: tf.Tensor, u: tf.Tensor): tf.Tensor {
  const n = g.size;
  const f = tf.customGrad(((gi: tf.Tensor, ui: tf.Tensor, save: tf.GradSaveFunc) => {
    const out = outputTensor(gi.shape);
    run(OP.SWIGLU_F, [gi, ui, out], 1, n);
    save([gi, ui]);
    return {
      value: out,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [gs, us] = saved as [tf.Tensor, tf.Tensor];
        const dg = outputTensor(gs.shape);
        const du = outputTensor(us.shape);
        run(OP.SWIGLU_B, [gs, us, dy, dg, du], 1, n);
        return [dg, du];
      },
    };
  }) as unknown as CustomGradFn);
  return f(g, u) as tf.Tensor;
}

/** log softmax(logits)[r, targets[r]] for logits [N, V] and int32 targets [N]: [N]. */
export function targetLogprobNative(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  const [N, V] = logits.shape;
  const t = targets.dtype === 'int32' ? targets : (tf.cast(targets, 'int32') as tf.Tensor1D);
  const f = tf.customGrad(((li: tf.Tensor, save: tf.GradSaveFunc) => {
    const out = outputTensor([N]);
    run(OP.LOGP_F, [li, t, out], N, V);
    save([li]);
    return {
      value: out,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const dl = outputTensor([N, V]);
        run(OP.LOGP_B, [saved[0]!, t, dy, dl], N, V);
        return [dl];
      },
    };
  }) as unknown as CustomGradFn);
  return f(logits) as tf.Tensor1D;
}

/** Forward of targetLogprobNative without a tape node: log softmax(logits)[r, t_r], [N] (the chunked head's pieces). */
export function targetLogprobRows(logits: tf.Tensor2D, targets: tf.Tensor1D): tf.Tensor1D {
  const [N, V] = logits.shape;
  const out = outputTensor([N]);
  run(OP.LOGP_F, [logits, targets, out], N, V);
  return out as tf.Tensor1D;
}

/** Its gradient: dy[r] * (onehot(t_r) - softmax(logits[r])), [N, V]. */
export function targetLogprobRowsGrad(logits: tf.Tensor2D, targets: tf.Tensor1D, dy: tf.Tensor1D): tf.Tensor2D {
  const [N, V] = logits.shape;
  const dl = outputTensor([N, V]);
  run(OP.LOGP_B, [logits, targets, dy, dl], N, V);
  return dl as tf.Tensor2D;
}

export function nativeRopeAvailable(): boolean {
  return nativeOpsAvailable() && typeof nativeAddon()?.rope === 'function';
}

/**
 * Rotary embeddings of x at positions start.. along axis posAxis (1: [B, T, heads, hd], 2: [B, heads, T, hd])
 * with the model's tables cos/sin [maxLen, hd]; the gradient is the inverse rotation of dy.
 */
export function ropeNative(
  x: tf.Tensor4D,
  cos: tf.Tensor2D,
  sin: tf.Tensor2D,
  start: number,
  posAxis: 1 | 2,
): tf.Tensor4D {
  const [d0, d1, d2, hd] = x.shape;
  const T = posAxis === 1 ? d1 : d2; // positions in the tables: checked by the caller (layers.ts rope)
  const dims = Int32Array.from(
    posAxis === 1 ? [d0 * d1, T, d2, hd, start, cos.shape[0]] : [d0 * d1 * d2, T, 1, hd, start, cos.shape[0]],
  );
  const apply = (src: tf.Tensor, sign: number): tf.Tensor => {
    const out = outputTensor(src.shape);
    nativeAddon()!.rope!(heap(), Float64Array.from([src, cos, sin, out].map(offsetOf)), dims, sign);
    return out;
  };
  const f = tf.customGrad(((xi: tf.Tensor) => ({
    value: apply(xi, 1),
    gradFunc: (dy: tf.Tensor) => [apply(dy, -1)],
  })) as unknown as CustomGradFn);
  return f(x) as tf.Tensor4D;
}

/** Rows of table [V, D] at int32 ids [N]: [N, D]; the gradient scatter-adds into the table's rows. */
export function embedNative(table: tf.Tensor2D, ids: tf.Tensor1D): tf.Tensor2D {
  const [V, D] = table.shape;
  const N = ids.shape[0];
  const idx = ids.dtype === 'int32' ? ids : (tf.cast(ids, 'int32') as tf.Tensor1D);
  const f = tf.customGrad(((ti: tf.Tensor) => {
    const out = outputTensor([N, D]);
    run(OP.EMBED_F, [ti, idx, out], N, D, V);
    return {
      value: out,
      gradFunc: (dy: tf.Tensor) => {
        const dt = outputTensor([V, D]);
        run(OP.EMBED_B, [idx, dy, dt], N, D, V);
        return [dt];
      },
    };
  }) as unknown as CustomGradFn);
  return f(table) as tf.Tensor2D;
}

/**
 * One AdamW update of x with gradient g and moments m, v: returns the new [x, m, v] (fresh tensors;
 * the caller assigns them). `wd` is the decoupled weight decay already gated by the caller.
 */
export function adamwNative(
  x: tf.Tensor,
  g: tf.Tensor,
  m: tf.Tensor,
  v: tf.Tensor,
  p: { lr: number; beta1: number; beta2: number; eps: number; wd: number; bc1: number; bc2: number },
): [tf.Tensor, tf.Tensor, tf.Tensor] {
  const gf = g.dtype === 'float32' ? g : tf.cast(g, 'float32');
  const outs = [outputTensor(x.shape), outputTensor(x.shape), outputTensor(x.shape)] as [
    tf.Tensor,
    tf.Tensor,
    tf.Tensor,
  ];
  const offs = Float64Array.from([x, gf, m, v, ...outs].map(offsetOf));
  nativeAddon()!.adamw!(heap(), offs, x.size, Float64Array.from([p.lr, p.beta1, p.beta2, p.eps, p.wd, p.bc1, p.bc2]));
  return outs;
}

export function nativeAdamwAvailable(): boolean {
  return nativeOpsAvailable() && typeof nativeAddon()?.adamw === 'function';
}
