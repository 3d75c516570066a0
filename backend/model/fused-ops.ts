// Fused kernels per tensor engine: the model's layers, the chunked head and AdamW ask here for a
// one-dispatch version of an op on the engine in use, and run the tfjs composition when there is
// none. The webgpu engine registers its WGSL kernels (backend/model/wgsl); the wasm engine's native
// ops predate this registry and are chosen by their own checks (native-ops.ts, native-attention.ts).
import * as tf from '@tensorflow/tfjs-core';

export interface AdamwStep {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** Decoupled weight decay, already gated by the caller (0 for 1-D parameters). */
  wd: number;
  bc1: number;
  bc2: number;
}

export interface FusedOps {
  /** x / sqrt(mean(x^2, -1) + eps) * w over the last axis. */
  rmsNorm?(x: tf.Tensor, w: tf.Tensor1D, eps: number): tf.Tensor;
  /** silu(gate) * up. */
  swiglu?(gate: tf.Tensor, up: tf.Tensor): tf.Tensor;
  /** Rotary embeddings at positions start.. along axis posAxis (1: [B, T, heads, hd], 2: [B, heads, T, hd]). */
  rope?(x: tf.Tensor4D, cos: tf.Tensor2D, sin: tf.Tensor2D, start: number, posAxis: 1 | 2): tf.Tensor4D;
  /** Causal attention without a cache on the [B, T, heads, hd] layout, keyMask [B, T]. */
  attention?(q: tf.Tensor4D, k: tf.Tensor4D, v: tf.Tensor4D, keyMask: tf.Tensor2D): tf.Tensor4D;
  /** log softmax(z)[r, t_r] (and the entropies) of logits z [n, V]; no tape node (the chunked head differentiates by hand). */
  targetLogprob?(
    z: tf.Tensor2D,
    targets: tf.Tensor1D,
    withEntropy: boolean,
  ): { logp: tf.Tensor1D; entropy?: tf.Tensor1D };
  /** Its gradient in z for upstream dlp (and dent), times scale: [n, V]. */
  targetLogprobGrad?(
    z: tf.Tensor2D,
    targets: tf.Tensor1D,
    dlp: tf.Tensor1D,
    dent: tf.Tensor1D | undefined,
    scale: number,
  ): tf.Tensor2D;
  /** One AdamW update: the new [x, m, v]. */
  adamw?(x: tf.Tensor, g: tf.Tensor, m: tf.Tensor, v: tf.Tensor, p: AdamwStep): [tf.Tensor, tf.Tensor, tf.Tensor];
}

export type FusedOpName = keyof FusedOps;

interface Entry {
  ops: FusedOps;
  /** The environment variable that narrows them: unset or 1 all, 0 none, else a comma list of op names. */
  env: string;
}

const registry = new Map<string, Entry>();
const NONE: FusedOps = {};

export function registerFusedOps(backend: string, ops: FusedOps, env: string): void {
  registry.set(backend, { ops, env });
}

/** The fused ops of the current engine that its switch allows (read on every call, so a bench can compare). */
export function fusedOps(): FusedOps {
  const e = registry.get(tf.getBackend());
  if (!e) return NONE;
  return select(e);
}

function select(e: Entry): FusedOps {
  const v = (process.env[e.env] ?? '').trim();
  if (v === '' || v === '1') return e.ops;
  if (v === '0') return NONE;
  const names = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const known = Object.keys(e.ops);
  const bad = names.filter((n) => !known.includes(n));
  if (bad.length > 0)
    throw new Error(
      `${e.env}='${v}': unknown op ${bad.join(', ')} (1 for all, 0 for none, or a comma list of ${known.join(', ')})`,
    );
  return Object.fromEntries(names.map((n) => [n, e.ops[n as FusedOpName]])) as FusedOps;
}
