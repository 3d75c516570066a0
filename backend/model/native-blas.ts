// Matmuls of the wasm backend through the platform's BLAS (vendor/rft-blas.node, built from
// native/rft_blas.c by scripts/build-native.mjs). The addon multiplies in place on the wasm heap,
// so no tensor is copied; shapes it does not cover (non-float32, partial batch broadcasts) and
// machines without the addon keep the wasm kernel. RFT_NATIVE_BLAS=0 turns it off.
import * as tf from '@tensorflow/tfjs-core';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { type InstallProbe, openblasLoadEnv, withEnv } from './openblas-env.js';

export interface NativeBlasAddon {
  /** C[i] = op(A[i]) @ op(B[i]); offsets in bytes into `heap`, strides in elements (0 broadcasts). */
  sgemm(
    heap: ArrayBuffer,
    aOff: number,
    bOff: number,
    cOff: number,
    batch: number,
    M: number,
    N: number,
    K: number,
    transA: number,
    transB: number,
    strideA: number,
    strideB: number,
  ): void;
  /** One fused decoding step (see backend/model/native-decode.ts); absent from older builds. */
  decode?(
    heap: ArrayBuffer,
    state: ArrayBuffer,
    tokens: Int32Array,
    cfg: Int32Array,
    off: Float64Array,
    eps: number,
    threads?: number,
    external?: (Float32Array | undefined)[],
  ): void;
  /** True when `decode` takes weights outside the heap (its `external` argument); absent from older builds. */
  decodeExternal?: boolean;
  /** decode adds q/k/v biases (Qwen2) from 3 more `off` slots per layer. */
  decodeBias?: boolean;
  /** Rotary embeddings (sign 1) or their gradient (sign -1), offsets [x, cos, sin, out], dims [R, T, n, hd, pos, maxLen]; absent from older builds. */
  rope?(heap: ArrayBuffer, offsets: Float64Array, dims: Int32Array, sign: number): void;
  /** Fused causal attention, forward (1) or backward (0) (see backend/model/native-attention.ts). */
  attention?(heap: ArrayBuffer, forward: number, offsets: Float64Array, dims: Int32Array, scale: number): void;
  /** Fused RMSNorm / SwiGLU / target log-prob and their gradients (see backend/model/native-ops.ts). */
  pointwise?(heap: ArrayBuffer, op: number, offsets: Float64Array, dims: Int32Array, scalar: number): void;
  /** One AdamW update into fresh buffers (see backend/model/optim.ts). */
  adamw?(heap: ArrayBuffer, offsets: Float64Array, n: number, params: Float64Array): void;
  /** The kernel family OpenBLAS chose for this CPU (e.g. Haswell, SkylakeX, Zen, Prescott); null for another BLAS. Older builds lack it. */
  blasCore?(): string | null;
  /** C = op(A) @ op(B) with each matrix in its own buffer (frozen weights outside the heap, see external-weights.ts). */
  sgemmExt?(
    aBuf: ArrayBuffer,
    aOff: number,
    bBuf: ArrayBuffer,
    bOff: number,
    cBuf: ArrayBuffer,
    cOff: number,
    M: number,
    N: number,
    K: number,
    transA: number,
    transB: number,
    alpha?: number,
    beta?: number,
  ): void;
}

export interface NativeBlasStatus {
  active: boolean;
  /** Why it is active or not, for the engine's one log line. */
  detail: string;
}

interface WasmTensorData {
  memoryOffset: number | null;
}
interface WasmBackendLike {
  wasm: { HEAPU8: Uint8Array };
  dataIdMap: { get(id: unknown): WasmTensorData };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

const require = createRequire(import.meta.url);
let addon: NativeBlasAddon | undefined;
let enabled = false;
let status: NativeBlasStatus = { active: false, detail: 'not installed' };

/** What the install's probe recorded (vendor/rft-blas.status.json), if it can be read. */
function readProbe(statusFile: string): InstallProbe | undefined {
  try {
    return JSON.parse(readFileSync(statusFile, 'utf8')) as InstallProbe;
  } catch {
    return undefined;
  }
}

/** Load the addon, building it once when it is missing and the build script is present (a dev checkout). */
export function loadNativeBlas(root: string): { addon?: NativeBlasAddon; detail: string } {
  const file = join(root, 'vendor', 'rft-blas.node');
  const statusFile = join(root, 'vendor', 'rft-blas.status.json');
  const script = join(root, 'scripts', 'build-native.mjs');
  if (!existsSync(file) && !existsSync(statusFile) && existsSync(script)) {
    try {
      execFileSync(process.execPath, [script, '--quiet'], { cwd: root, stdio: 'ignore', timeout: 60_000 });
    } catch {
      // The script writes its reason to the status file; a crash leaves the wasm path.
    }
  }
  if (!existsSync(file)) {
    let why = 'vendor/rft-blas.node is not built';
    try {
      why = (JSON.parse(readFileSync(statusFile, 'utf8')) as { detail: string }).detail;
    } catch {
      /* no status: keep the generic reason */
    }
    return { detail: why };
  }
  const { set, note } = openblasLoadEnv(process.env, readProbe(statusFile));
  try {
    return { addon: withEnv(set, () => require(file) as NativeBlasAddon), detail: `vendor/rft-blas.node${note}` };
  } catch (e) {
    return { detail: `vendor/rft-blas.node failed to load: ${(e as Error).message.split('\n')[0]}` };
  }
}

/**
 * Route the wasm backend's BatchMatMul through the native sgemm. Call once after the wasm backend
 * is initialised (the original kernel's setup must have run: it is kept as the fallback).
 */
export function installNativeBlas(root: string, addonOverride?: NativeBlasAddon): NativeBlasStatus {
  if (process.env.RFT_NATIVE_BLAS === '0') return (status = { active: false, detail: 'off (RFT_NATIVE_BLAS=0)' });
  if (tf.getBackend() !== 'wasm')
    return (status = { active: false, detail: `not used with the ${tf.getBackend()} backend` });
  if (addon) {
    enabled = true;
    return (status = { active: true, detail: status.detail });
  }
  const backend = tf.backend() as unknown as WasmBackendLike;
  if (!(backend.wasm.HEAPU8.buffer instanceof ArrayBuffer))
    return (status = { active: false, detail: 'wasm memory is shared (threaded wasm): not supported' });
  const loaded = addonOverride ? { addon: addonOverride, detail: 'given addon' } : loadNativeBlas(root);
  if (!loaded.addon) return (status = { active: false, detail: loaded.detail });
  const original = tf.getKernel('BatchMatMul', 'wasm');
  if (!original) return (status = { active: false, detail: 'wasm BatchMatMul kernel not registered' });
  addon = loaded.addon;
  const native = addon;
  const fallback = original.kernelFunc;
  tf.unregisterKernel('BatchMatMul', 'wasm');
  tf.registerKernel({
    kernelName: 'BatchMatMul',
    backendName: 'wasm',
    kernelFunc: (args) =>
      (enabled ? nativeBatchMatMul(native, args as unknown as MatMulArgs) : null) ?? (fallback(args) as tf.TensorInfo),
  });
  enabled = true;
  const core = native.blasCore?.();
  return (status = {
    active: true,
    detail: `BatchMatMul via ${loaded.detail}${core ? ` (OpenBLAS core ${core})` : ''}`,
  });
}

/** Switch between the native and the wasm matmul at run time (benchmarks compare both in one run). */
export function setNativeBlasEnabled(on: boolean): void {
  enabled = on && addon !== undefined;
}

/** The loaded addon (after installNativeBlas succeeded), for the other native kernels. */
export function nativeAddon(): NativeBlasAddon | undefined {
  return addon;
}

/** True when matmuls currently go through the native BLAS. */
export function nativeBlasActive(): boolean {
  return enabled;
}

interface MatMulArgs {
  inputs: { a: tf.TensorInfo; b: tf.TensorInfo };
  backend: WasmBackendLike;
  attrs: { transposeA: boolean; transposeB: boolean };
}

function size(shape: number[]): number {
  let n = 1;
  for (const d of shape) n *= d;
  return n;
}

/** The native product, or null for the cases left to the wasm kernel. */
function nativeBatchMatMul(native: NativeBlasAddon, { inputs, backend, attrs }: MatMulArgs): tf.TensorInfo | null {
  const { a, b } = inputs;
  const { transposeA, transposeB } = attrs;
  if (a.dtype !== 'float32' || b.dtype !== 'float32') return null;
  const ra = a.shape.length;
  const rb = b.shape.length;
  if (ra < 2 || rb < 2) return null;
  const M = transposeA ? a.shape[ra - 1]! : a.shape[ra - 2]!;
  const K = transposeA ? a.shape[ra - 2]! : a.shape[ra - 1]!;
  const Kb = transposeB ? b.shape[rb - 1]! : b.shape[rb - 2]!;
  const N = transposeB ? b.shape[rb - 2]! : b.shape[rb - 1]!;
  if (K !== Kb) return null; // the wasm kernel throws tfjs' own message
  const outer = tf.broadcast_util.assertAndGetBroadcastShape(a.shape.slice(0, -2), b.shape.slice(0, -2));
  const batch = size(outer);
  const batchA = size(a.shape.slice(0, -2));
  const batchB = size(b.shape.slice(0, -2));
  // Either operand is a full batch or a single matrix broadcast over it; other broadcasts stay on wasm.
  if ((batchA !== batch && batchA !== 1) || (batchB !== batch && batchB !== 1)) return null;
  const aOff = backend.dataIdMap.get(a.dataId).memoryOffset;
  const bOff = backend.dataIdMap.get(b.dataId).memoryOffset;
  if (aOff == null || bOff == null) return null;
  const out = backend.makeOutput([...outer, M, N], 'float32');
  const cOff = backend.dataIdMap.get(out.dataId).memoryOffset!;
  // Read the heap after makeOutput: an allocation can grow (and replace) the wasm memory.
  native.sgemm(
    backend.wasm.HEAPU8.buffer as ArrayBuffer,
    aOff,
    bOff,
    cOff,
    batch,
    M,
    N,
    K,
    transposeA ? 1 : 0,
    transposeB ? 1 : 0,
    batchA === 1 ? 0 : M * K,
    batchB === 1 ? 0 : K * N,
  );
  return out;
}
