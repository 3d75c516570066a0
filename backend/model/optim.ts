// AdamW with decoupled weight decay and gradient clipping by global norm.
import { tf } from './engine.js';
import { adamwNative, nativeAdamwAvailable } from './native-ops.js';
import { fusedOps } from './fused-ops.js';

export interface AdamWOptions {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Decoupled weight decay; not applied to 1-D parameters (norm gains, biases). */
  weightDecay?: number;
}

export class AdamW {
  private readonly m = new Map<string, tf.Variable>();
  private readonly v = new Map<string, tf.Variable>();
  private t = 0;
  readonly beta1: number;
  readonly beta2: number;
  readonly eps: number;
  readonly weightDecay: number;

  constructor(
    private readonly vars: tf.Variable[],
    public lr: number | AdamWOptions,
  ) {
    const o = typeof lr === 'number' ? { lr } : lr;
    this.lr = o.lr;
    this.beta1 = o.beta1 ?? 0.9;
    this.beta2 = o.beta2 ?? 0.999;
    this.eps = o.eps ?? 1e-8;
    this.weightDecay = o.weightDecay ?? 0;
    for (const x of vars) {
      this.m.set(x.name, tf.variable(tf.zerosLike(x), false));
      this.v.set(x.name, tf.variable(tf.zerosLike(x), false));
    }
  }

  get stepCount(): number {
    return this.t;
  }

  /** Apply one update from gradients keyed by variable name. */
  step(grads: Record<string, tf.Tensor>, lr = this.lr as number): void {
    this.t++;
    const bc1 = 1 - Math.pow(this.beta1, this.t);
    const bc2 = 1 - Math.pow(this.beta2, this.t);
    // One fused update per parameter instead of about a dozen kernels: native, or WGSL on webgpu.
    const fused = nativeAdamwAvailable() ? adamwNative : fusedOps().adamw;
    tf.tidy(() => {
      for (const x of this.vars) {
        const g = grads[x.name];
        if (!g) continue;
        const m = this.m.get(x.name)!;
        const v = this.v.get(x.name)!;
        if (fused) {
          const wd = this.weightDecay > 0 && x.rank > 1 ? this.weightDecay : 0;
          const [x2, m2, v2] = fused(x, g, m, v, {
            lr,
            beta1: this.beta1,
            beta2: this.beta2,
            eps: this.eps,
            wd,
            bc1,
            bc2,
          });
          m.assign(m2);
          v.assign(v2);
          x.assign(x2);
          continue;
        }
        const m2 = tf.add(tf.mul(m, this.beta1), tf.mul(g, 1 - this.beta1));
        const v2 = tf.add(tf.mul(v, this.beta2), tf.mul(tf.square(g), 1 - this.beta2));
        m.assign(m2);
        v.assign(v2);
        let upd = tf.div(tf.div(m2, bc1), tf.add(tf.sqrt(tf.div(v2, bc2)), this.eps));
        if (this.weightDecay > 0 && x.rank > 1) upd = tf.add(upd, tf.mul(x, this.weightDecay));
        x.assign(tf.sub(x, tf.mul(upd, lr)));
      }
    });
  }

  /** Optimiser state for resuming (moments and step count). */
  async state(): Promise<{ t: number; m: Record<string, Float32Array>; v: Record<string, Float32Array> }> {
    const m: Record<string, Float32Array> = {};
    const v: Record<string, Float32Array> = {};
    for (const [k, x] of this.m) m[k] = (await x.data()) as Float32Array;
    for (const [k, x] of this.v) v[k] = (await x.data()) as Float32Array;
    return { t: this.t, m, v };
  }

  loadState(s: { t: number; m: Record<string, Float32Array>; v: Record<string, Float32Array> }): void {
    this.t = s.t;
    for (const [k, x] of this.m) if (s.m[k]) x.assign(tf.tensor(s.m[k]!, x.shape));
    for (const [k, x] of this.v) if (s.v[k]) x.assign(tf.tensor(s.v[k]!, x.shape));
  }

  dispose(): void {
    for (const x of this.m.values()) x.dispose();
    for (const x of this.v.values()) x.dispose();
  }
}

/**
 * Scale gradients so their global L2 norm is at most maxNorm; returns the norm before clipping.
 * Async: the webgpu engine has no synchronous read back from the GPU (dataSync throws in Node).
 */
export async function clipByGlobalNorm(
  grads: Record<string, tf.Tensor>,
  maxNorm: number,
): Promise<{ grads: Record<string, tf.Tensor>; norm: number }> {
  const names = Object.keys(grads);
  // One addN of every gradient's sum of squares: on webgpu it runs in chunks within the per-stage
  // storage-buffer limit (webgpu-kernels.ts), a sixth of the dispatches of adding them two at a time.
  const normT = tf.tidy(() =>
    tf.sqrt(names.length === 0 ? tf.scalar(0) : tf.addN(names.map((n) => tf.sum(tf.square(grads[n]!))))),
  );
  const norm = (await normT.data())[0]!;
  normT.dispose();
  if (!(maxNorm > 0) || norm <= maxNorm || !Number.isFinite(norm)) return { grads, norm };
  const scale = maxNorm / (norm + 1e-6);
  const out: Record<string, tf.Tensor> = {};
  for (const n of names) {
    out[n] = tf.mul(grads[n]!, scale);
    grads[n]!.dispose();
  }
  return { grads: out, norm };
}

/**
 * Linear warm-up then cosine (or linear / constant) decay to minRatio * lr. The decay follows
 * `progress` (0..1) when given, e.g. the share of a wall-clock budget used, else step / totalSteps.
 */
export function lrSchedule(
  step: number,
  o: {
    lr: number;
    warmupSteps?: number;
    totalSteps?: number;
    decay?: 'cosine' | 'linear' | 'constant';
    minRatio?: number;
    progress?: number;
  },
): number {
  const warm = o.warmupSteps ?? 0;
  if (warm > 0 && step < warm) return (o.lr * (step + 1)) / warm;
  const total = o.totalSteps ?? 0;
  const decay = o.decay ?? 'constant';
  if (decay === 'constant' || (o.progress === undefined && total <= warm)) return o.lr;
  const p = Math.max(0, Math.min(1, o.progress ?? (step - warm) / Math.max(1, total - warm)));
  const min = (o.minRatio ?? 0.1) * o.lr;
  return decay === 'linear' ? o.lr - (o.lr - min) * p : min + 0.5 * (o.lr - min) * (1 + Math.cos(Math.PI * p));
}
