// Frozen base weights kept outside the wasm heap. The wasm engine has one 4 GiB heap for weights and
// activations together, so a 1B model's f32 weights (4.9 GB) cannot load there. Under LoRA the base
// weights never change, so each frozen matrix can live in an ordinary Node buffer instead, in Hugging
// Face's [out, in] layout (as read from safetensors, no transpose), and be read by the native addon's
// sgemmExt (native/rft_blas.c) straight from there: activations stay on the heap, the weight does not.
import { InfrastructureError } from '../core/errors.js';
import * as tf from '@tensorflow/tfjs-core';
import { nativeAddon, nativeBlasActive } from './native-blas.js';
import { heap, offsetOf, outputTensor } from './native-heap.js';

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

/** A frozen matrix in HF layout: `rows` x `cols` = [out, in] (the embedding table: [vocab, dModel]). */
export class ExternalWeight {
  constructor(
    readonly name: string,
    readonly rows: number,
    readonly cols: number,
    private values: Float32Array = new Float32Array(rows * cols),
  ) {
    if (values.length !== rows * cols)
      throw new Error(`external weight '${name}': ${values.length} values for [${rows}, ${cols}]`);
  }

  get data(): Float32Array {
    return this.values;
  }

  /** Adopt freshly read values (no copy): the loader streams each tensor from its file into here. */
  adopt(values: Float32Array): void {
    if (values.length !== this.rows * this.cols)
      throw new Error(`external weight '${this.name}': ${values.length} values for [${this.rows}, ${this.cols}]`);
    this.values = values;
  }

  /**
   * Its values as an in-heap tensor in the model's memory layout (a new tensor the caller disposes):
   * [in, out] for a linear weight, the embedding table [vocab, dModel] as it is.
   */
  toHeapTensor(): tf.Tensor2D {
    const t = tf.tensor2d(this.values, [this.rows, this.cols]);
    if (this.name === 'model.embed_tokens.weight') return t;
    const out = tf.transpose(t) as tf.Tensor2D;
    t.dispose();
    return out;
  }
}

/**
 * Whether frozen weights can go outside the heap: the wasm backend with the native addon's sgemmExt.
 * RFT_EXTERNAL_WEIGHTS=0 keeps them in the heap.
 */
export function externalWeightsAvailable(): boolean {
  return (
    nativeBlasActive() &&
    typeof nativeAddon()?.sgemmExt === 'function' &&
    tf.getBackend() === 'wasm' &&
    process.env.RFT_EXTERNAL_WEIGHTS !== '0'
  );
}

/** Whether a run's model loads with its frozen base outside the heap: under LoRA (`model.lora` set), when the addon allows. */
export function frozenOutsideHeap(lora: unknown): boolean {
  return lora !== undefined && lora !== null && externalWeightsAvailable();
}

/**
 * Whether a model that only runs (scoring, sampling, evaluation, a rollout process: no weight trains)
 * loads its projections, embedding table and head outside the heap: whenever the addon allows.
 * RFT_EXTERNAL_WEIGHTS=0 keeps them in the heap.
 */
export function inferenceOutsideHeap(): boolean {
  return externalWeightsAvailable();
}

/** "N MiB of weights outside the wasm heap" for a log line, or undefined when every weight is in the heap. */
export function outsideHeapNote(model: { external: Map<string, ExternalWeight> }): string | undefined {
  if (!model.external.size) return undefined;
  const bytes = [...model.external.values()].reduce((a, w) => a + w.data.byteLength, 0);
  return `${(bytes / 2 ** 20).toFixed(1)} MiB of weights outside the wasm heap`;
}

/** The parameters kept outside the heap when a model's base is frozen: every projection, the embedding table and the head. */
export function isExternalizable(name: string): boolean {
  return /_proj\.weight$/.test(name) || name === 'model.embed_tokens.weight' || name === 'lm_head.weight';
}

function ext(): NonNullable<ReturnType<typeof nativeAddon>>['sgemmExt'] & {} {
  const f = nativeAddon()?.sgemmExt;
  if (!f)
    throw new InfrastructureError(
      'frozen weights outside the wasm heap need the native addon (vendor/rft-blas.node with sgemmExt)',
    );
  return f;
}

/** C [M, N] (new heap tensor) = a [M, K] @ W^T (transW) or a [M, K] @ W, with W external. */
export function productWithExternal(a: tf.Tensor2D, w: ExternalWeight, transW: boolean): tf.Tensor2D {
  const [M, K] = a.shape;
  const N = transW ? w.rows : w.cols;
  if (K !== (transW ? w.cols : w.rows))
    throw new Error(`external weight '${w.name}' [${w.rows}, ${w.cols}] does not fit an input of ${K} features`);
  const out = outputTensor([M, N]) as tf.Tensor2D;
  const aOff = offsetOf(a);
  const cOff = offsetOf(out);
  const h = heap(); // after the output's allocation (which can grow and replace the heap)
  const d = w.data;
  ext()(h, aOff, d.buffer as ArrayBuffer, d.byteOffset, h, cOff, M, N, K, 0, transW ? 1 : 0);
  return out;
}

/**
 * y = x W^T for x [..., in] and a frozen external W [out, in]: the gradient is dx = dy W only (no
 * weight gradient), both products read W where it lies.
 */
export function externalLinear(x: tf.Tensor, w: ExternalWeight): tf.Tensor {
  const lead = x.shape.slice(0, -1);
  const x2 = tf.reshape(x, [-1, w.cols]) as tf.Tensor2D;
  const f = tf.customGrad(((xi: tf.Tensor) => ({
    value: productWithExternal(xi as tf.Tensor2D, w, true),
    gradFunc: (dy: tf.Tensor) => [productWithExternal(dy as tf.Tensor2D, w, false)],
  })) as unknown as CustomGradFn);
  return tf.reshape(f(x2) as tf.Tensor, [...lead, w.rows]);
}

/** c (heap) += alpha * op(a) @ op(b), all three on the heap. */
function accumulate(c: tf.Tensor, a: tf.Tensor2D, b: tf.Tensor2D, transB: boolean, alpha: number): void {
  const [M, K] = a.shape;
  const N = transB ? b.shape[0] : b.shape[1];
  const h = heap();
  ext()(h, offsetOf(a), h, offsetOf(b), h, offsetOf(c), M, N, K, 0, transB ? 1 : 0, alpha, 1);
}

/**
 * y = x W^T + scale (x A) B for x [..., in], a frozen external W [out, in] and a LoRA pair A [in, r],
 * B [r, out], as one op: the adapter term is accumulated into the frozen product in place, so a
 * projection keeps one [N, out] activation instead of four (y, x A B, its scaled copy, the sum).
 * Gradients: dx = dy W + scale (dy B^T) A^T, dA = scale x^T (dy B^T), dB = scale (x A)^T dy.
 */
export function externalLoraLinear(
  x: tf.Tensor,
  w: ExternalWeight,
  a: tf.Tensor2D,
  b: tf.Tensor2D,
  scale: number,
): tf.Tensor {
  const lead = x.shape.slice(0, -1);
  const x2 = tf.reshape(x, [-1, w.cols]) as tf.Tensor2D;
  const f = tf.customGrad(((xi: tf.Tensor, ai: tf.Tensor, bi: tf.Tensor, save: tf.GradSaveFunc) => {
    const xs = xi as tf.Tensor2D;
    const as = ai as tf.Tensor2D;
    const bs = bi as tf.Tensor2D;
    const xa = tf.matMul(xs, as) as tf.Tensor2D; // [N, r]
    const y = productWithExternal(xs, w, true);
    accumulate(y, xa, bs, false, scale);
    save([xs, as, bs, xa]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [xv, av, bv, xav] = saved as [tf.Tensor2D, tf.Tensor2D, tf.Tensor2D, tf.Tensor2D];
        const d = dy as tf.Tensor2D;
        const g = tf.matMul(d, bv, false, true) as tf.Tensor2D; // dy B^T [N, r]
        const dx = productWithExternal(d, w, false);
        accumulate(dx, g, av, true, scale);
        const dA = tf.mul(tf.matMul(xv, g, true, false), scale);
        const dB = tf.mul(tf.matMul(xav, d, true, false), scale);
        g.dispose();
        return [dx, dA, dB];
      },
    };
  }) as unknown as CustomGradFn);
  return tf.reshape(f(x2, a, b) as tf.Tensor, [...lead, w.rows]);
}

/** Rows of a frozen external table [V, D] at ids [N]: a new [N, D] heap tensor (no gradient: the table is frozen). */
export function externalEmbed(table: ExternalWeight, ids: tf.Tensor1D): tf.Tensor2D {
  const idx = ids.dataSync();
  const D = table.cols;
  const out = new Float32Array(idx.length * D);
  const src = table.data;
  for (let r = 0; r < idx.length; r++) {
    const id = idx[r]!;
    if (!(id >= 0 && id < table.rows)) throw new Error(`token id ${id} is outside the vocabulary of ${table.rows}`);
    out.set(src.subarray(id * D, (id + 1) * D), r * D);
  }
  return tf.tensor2d(out, [idx.length, D]);
}

/**
 * W + scale * (A B)^T in HF layout [out, in] as a new array, for exports and weight sync: the
 * adapter product is formed on the heap ([out, in] = B^T A^T, one module at a time), the sum outside it.
 */
export function mergedHf(w: ExternalWeight, a: tf.Tensor, b: tf.Tensor, scale: number): Float32Array {
  const out = Float32Array.from(w.data);
  addAdapterHf(out, a, b, scale);
  return out;
}

/** target [out, in] += scale * (A B)^T for A [in, r], B [r, out]. */
export function addAdapterHf(target: Float32Array, a: tf.Tensor, b: tf.Tensor, scale: number): void {
  const delta = tf.tidy(() => tf.mul(tf.matMul(b, a, true, true), scale));
  const d = delta.dataSync();
  delta.dispose();
  if (d.length !== target.length)
    throw new Error(`adapter product of ${d.length} values for a weight of ${target.length}`);
  for (let i = 0; i < d.length; i++) target[i]! += d[i];
}
