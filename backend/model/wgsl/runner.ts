// Runs a hand-written WGSL compute kernel on tfjs's webgpu backend: reads tfjs tensors' GPU buffers,
// writes any number of new output tensors in one dispatch (tfjs's own runWebGPUProgram has a single
// output, so RMSNorm's backward or AdamW would take several), and records the dispatch into the
// backend's command encoder, so it runs in order with tfjs's kernels and is freed by the same rules.
import * as tf from '@tensorflow/tfjs-core';
import { logger } from '../../core/log.js';

const log = logger('wgsl');

// WebGPU's buffer usage flags (spec constants).
const USAGE_UNIFORM = 0x40;
const USAGE_COPY_DST = 0x08;

interface GpuBuffer {
  size: number;
}
interface GpuPipeline {
  getBindGroupLayout(i: number): unknown;
}
interface GpuPass {
  setPipeline(p: GpuPipeline): void;
  setBindGroup(i: number, g: unknown): void;
  dispatchWorkgroups(x: number, y?: number, z?: number): void;
}
interface GpuDevice {
  limits: Record<string, number>;
  createShaderModule(d: { code: string; label?: string }): unknown;
  createComputePipeline(d: {
    layout: 'auto';
    label?: string;
    compute: { module: unknown; entryPoint: string };
  }): GpuPipeline;
  createBindGroup(d: {
    layout: unknown;
    entries: { binding: number; resource: { buffer: GpuBuffer; offset?: number; size?: number } }[];
  }): unknown;
  pushErrorScope(f: 'validation' | 'out-of-memory' | 'internal'): void;
  popErrorScope(): Promise<{ message: string } | null>;
  queue: { writeBuffer(b: GpuBuffer, off: number, data: ArrayBuffer, dataOff?: number, size?: number): void };
}
/** The parts of tfjs-backend-webgpu's WebGPUBackend this runner uses (public fields of its class). */
interface WebgpuBackendLike {
  device: GpuDevice;
  /** `values`: the CPU copy tfjs keeps after a read (it takes tensors for immutable). */
  tensorMap: { get(id: tf.DataId): { resource?: unknown; values?: unknown; dtype: tf.DataType } };
  commandEncoder: { beginComputePass(d: object): GpuPass } | null;
  computePassEncoder: GpuPass | null;
  dispatchCountInPass: number;
  commandQueueOwnedIds: WeakSet<object>;
  /** Set while tf.time / tf.profile runs: each program then gets its own pass with GPU timestamps. */
  activeTimers: { name: string; query: Promise<number> }[] | null | undefined;
  supportTimestampQuery: boolean;
  querySet: unknown;
  querySetCount: number;
  getQueryTime(): Promise<number>;
  uniformPendingDisposal: GpuBuffer[];
  bufferManager: { acquireBuffer(size: number, usage: number): GpuBuffer; releaseBuffer(b: GpuBuffer): void };
  makeTensorInfo(shape: number[], dtype: tf.DataType): tf.TensorInfo;
  uploadToGPU(id: tf.DataId): void;
  ensureCommandEncoderReady(): void;
  endComputePassEncoder(): void;
  submitQueue(): void;
}

/** A kernel: its WGSL (entry point `main`), how many inputs and outputs it binds, its uniforms. */
export interface WgslKernel {
  /** Names the kernel in errors and the profile; with `code` it keys the pipeline cache. */
  name: string;
  /**
   * The shader. Bindings: inputs at 0..nIn-1 (`var<storage, read>`), then tensors written in place
   * (`var<storage, read_write>`), outputs after them (`read_write`), then the uniform struct `u` when
   * `uniforms` is non-empty.
   */
  code: string;
  /** The uniform struct's 4-byte fields in order: name and type (i32, u32, f32). */
  uniforms: [string, UniformType][];
}

export type UniformType = 'i32' | 'u32' | 'f32';

/** One dispatch: the kernel, its inputs, the outputs to allocate, the uniform values, the grid. */
export interface WgslDispatch {
  kernel: WgslKernel;
  inputs: tf.Tensor[];
  /**
   * Tensors the kernel writes in place (bound read-write after the inputs). Only for tensors the caller
   * made and owns alone (a decoder's KV cache): tfjs believes tensors immutable, so no other tensor or
   * kernel may share them.
   */
  inouts?: tf.Tensor[];
  outputs: { shape: number[]; dtype?: tf.DataType }[];
  uniforms?: Record<string, number>;
  workgroups: [number, number?, number?];
}

const pipelines = new WeakMap<object, Map<string, GpuPipeline>>();
const kernelErrors: string[] = [];
const broken = new Map<string, string>();
/** Dispatches per kernel name since the last reset (the per-op profile reads it). */
const dispatchCounts = new Map<string, number>();

function gpuBackend(): WebgpuBackendLike {
  if (tf.getBackend() !== 'webgpu')
    throw new Error(`a WGSL kernel needs the webgpu engine (the current engine is ${tf.getBackend()})`);
  return tf.backend() as unknown as WebgpuBackendLike;
}

/** Bytes of workgroup memory a kernel may use on the backend's device (tfjs asks for the adapter's maximum). */
export function workgroupStorageBytes(): number {
  return gpuBackend().device.limits.maxComputeWorkgroupStorageSize ?? 16384;
}

/**
 * Each kernel object's cache key (name + shader text, kilobytes), built once: a decode step makes ~75
 * lookups, and building the key each time cost about 5 us (a stored string also keeps its hash).
 */
const keys = new WeakMap<WgslKernel, string>();

function keyOf(k: WgslKernel): string {
  let key = keys.get(k);
  if (key === undefined) keys.set(k, (key = `${k.name}\n${k.code}`));
  return key;
}

function pipelineFor(b: WebgpuBackendLike, k: WgslKernel): GpuPipeline {
  let cache = pipelines.get(b.device);
  if (!cache) pipelines.set(b.device, (cache = new Map()));
  const key = keyOf(k);
  // A kernel that failed to compile is refused by name: dispatching it would leave reads waiting forever.
  const failed = broken.get(key);
  if (failed) throw new Error(`WGSL kernel ${k.name} failed to compile: ${failed}`);
  let p = cache.get(key);
  if (!p) {
    // Shader errors come back asynchronously: they are recorded (wgslKernelErrors) and logged.
    b.device.pushErrorScope('validation');
    p = b.device.createComputePipeline({
      layout: 'auto',
      label: k.name,
      compute: { module: b.device.createShaderModule({ code: k.code, label: k.name }), entryPoint: 'main' },
    });
    void b.device.popErrorScope().then((e) => {
      if (!e) return;
      kernelErrors.push(`${k.name}: ${e.message}`);
      broken.set(key, e.message);
      log.error(`WGSL kernel ${k.name} failed to compile: ${e.message}`);
    });
    cache.set(key, p);
  }
  return p;
}

/**
 * Compiles kernels ahead of use and returns their errors (empty when all compile): tests and the
 * bench call it, so a shader error is a message naming the kernel, not a dispatch that never finishes.
 */
export async function compileWgslKernels(kernels: WgslKernel[]): Promise<string[]> {
  const b = gpuBackend();
  const errors: string[] = [];
  for (const k of kernels) {
    b.device.pushErrorScope('validation');
    b.device.createComputePipeline({
      layout: 'auto',
      label: k.name,
      compute: { module: b.device.createShaderModule({ code: k.code, label: k.name }), entryPoint: 'main' },
    });
    const e = await b.device.popErrorScope();
    if (e) {
      errors.push(`${k.name}: ${e.message}`);
      broken.set(keyOf(k), e.message); // refused by name from now on, before anything is recorded
    }
  }
  return errors;
}

/** Compile and validation errors of the kernels run so far (asynchronous on the device: await a read first). */
export function wgslKernelErrors(): string[] {
  return [...kernelErrors];
}

export function wgslDispatchCounts(reset = false): Map<string, number> {
  const out = new Map(dispatchCounts);
  if (reset) dispatchCounts.clear();
  return out;
}

/** Packs uniform values in the struct's field order (a 16-byte multiple, as uniform buffers want). */
function packUniforms(k: WgslKernel, values: Record<string, number>): ArrayBuffer {
  const buf = new ArrayBuffer(Math.max(16, Math.ceil((k.uniforms.length * 4) / 16) * 16));
  const dv = new DataView(buf);
  k.uniforms.forEach(([name, type], i) => {
    const v = values[name];
    if (v === undefined || !Number.isFinite(v)) throw new Error(`WGSL kernel ${k.name}: uniform '${name}' is ${v}`);
    if (type === 'f32') dv.setFloat32(i * 4, v, true);
    else if (type === 'i32') dv.setInt32(i * 4, v, true);
    else dv.setUint32(i * 4, v, true);
  });
  return buf;
}

/**
 * Drops the CPU copy tfjs cached when these tensors were last read: they are about to be written in
 * place, and tfjs would answer the next read (or run a small op on the CPU) from the stale copy.
 */
function forgetCpuCopies(b: WebgpuBackendLike, written: readonly tf.Tensor[]): void {
  for (const t of written) b.tensorMap.get(t.dataId).values = null;
}

/** Records one dispatch into tfjs's open compute pass, as tfjs records its own programs. */
function record(
  b: WebgpuBackendLike,
  name: string,
  pipeline: GpuPipeline,
  bindGroup: unknown,
  workgroups: readonly [number, number?, number?],
): void {
  b.ensureCommandEncoderReady();
  // Under tf.time, as tfjs does for its own programs: a pass of its own with timestamps where the
  // device has 'timestamp-query', so the kernel's GPU time counts in kernelMs under its name.
  const timed = b.activeTimers != null;
  if (timed && b.supportTimestampQuery) {
    b.endComputePassEncoder();
    b.querySet ??= (b.device as unknown as { createQuerySet(d: object): unknown }).createQuerySet({
      type: 'timestamp',
      count: b.querySetCount,
    });
    b.computePassEncoder = b.commandEncoder!.beginComputePass({
      timestampWrites: { querySet: b.querySet, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 },
    });
  } else if (!b.computePassEncoder) b.computePassEncoder = b.commandEncoder!.beginComputePass({});
  const pass = b.computePassEncoder!;
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bindGroup);
  const [x, y = 1, z = 1] = workgroups;
  pass.dispatchWorkgroups(x, y, z);
  dispatchCounts.set(name, (dispatchCounts.get(name) ?? 0) + 1);
  b.dispatchCountInPass++;
  if (timed) {
    b.endComputePassEncoder();
    b.activeTimers!.push({ name, query: b.getQueryTime() });
  } else if (b.dispatchCountInPass >= (tf.env().get('WEBGPU_DEFERRED_SUBMIT_BATCH_SIZE') as number)) {
    b.endComputePassEncoder();
    b.submitQueue();
  }
}

/** Runs one dispatch and returns its outputs as new tensors (on the webgpu engine). */
export function runWgsl(d: WgslDispatch): tf.Tensor[] {
  const b = gpuBackend();
  const { kernel: k } = d;
  const inouts = d.inouts ?? [];
  const entries = [...d.inputs, ...inouts].map((t, i) => ({
    binding: i,
    resource: { buffer: inputBuffer(b, k, t, i) },
  }));
  const outInfos = d.outputs.map((o) => b.makeTensorInfo(o.shape, o.dtype ?? 'float32'));
  for (const t of outInfos) {
    b.uploadToGPU(t.dataId); // an output gets its (pooled) buffer
    entries.push({ binding: entries.length, resource: { buffer: tensorBuffer(b, t, `WGSL kernel ${k.name}`) } });
  }
  if (k.uniforms.length > 0) {
    const data = packUniforms(k, d.uniforms ?? {});
    const ub = b.bufferManager.acquireBuffer(data.byteLength, USAGE_UNIFORM | USAGE_COPY_DST);
    b.device.queue.writeBuffer(ub, 0, data, 0, data.byteLength);
    b.uniformPendingDisposal.push(ub); // released with tfjs's own uniforms after the next submit
    entries.push({ binding: entries.length, resource: { buffer: ub } });
  }
  const pipeline = pipelineFor(b, k);
  const bindGroup = b.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
  // Buffers used by a recorded, unsubmitted command are not recycled before the submit.
  for (const t of [...d.inputs, ...inouts, ...outInfos]) b.commandQueueOwnedIds.add(t.dataId as object);
  forgetCpuCopies(b, inouts);
  record(b, k.name, pipeline, bindGroup, d.workgroups);
  return outInfos.map((info) => tf.engine().makeTensorFromTensorInfo(info));
}

/**
 * A kernel from its bindings and body: inputs (read-only storage arrays), outputs (read-write),
 * the uniform struct `u`, and `body`, WGSL that defines `fn main` with its own @compute attributes.
 */
export function wgslKernel(
  name: string,
  io: {
    inputs: [string, string][];
    inouts?: [string, string][];
    outputs: [string, string][];
    uniforms?: [string, UniformType][];
  },
  body: string,
): WgslKernel {
  const uniforms = io.uniforms ?? [];
  const lines: string[] = [];
  let i = 0;
  for (const [n, t] of io.inputs) lines.push(`@group(0) @binding(${i++}) var<storage, read> ${n}: array<${t}>;`);
  for (const [n, t] of [...(io.inouts ?? []), ...io.outputs])
    lines.push(`@group(0) @binding(${i++}) var<storage, read_write> ${n}: array<${t}>;`);
  if (uniforms.length > 0) {
    lines.push(`struct U { ${uniforms.map(([n, t]) => `${n}: ${t},`).join(' ')} };`);
    lines.push(`@group(0) @binding(${i}) var<uniform> u: U;`);
  }
  return { name, code: `${lines.join('\n')}\n${body}`, uniforms };
}

/** Workgroups for `n` items of `perGroup` each, as an (x, y) grid within the 65,535-per-axis limit. */
export function grid(n: number, perGroup: number): [number, number] {
  const groups = Math.max(1, Math.ceil(n / perGroup));
  const x = Math.min(groups, 65535);
  return [x, Math.ceil(groups / x)];
}

/** WGSL: the flat workgroup index of a grid() dispatch (needs the builtins wid and nwg in scope). */
export const GROUP_INDEX = 'let group = wid.y * nwg.x + wid.x;';

/**
 * Submits the work recorded so far. A queue write (WgslUniforms.set, writeWgslTensor) takes effect
 * before any command submitted after it, so work recorded before the write must be submitted first.
 */
export function flushWgsl(): void {
  const b = gpuBackend();
  if (!b.commandEncoder) return;
  b.endComputePassEncoder();
  b.submitQueue();
}

/**
 * Uniform values in a buffer of their own, for bound dispatches: written once, rewritten by `set`
 * between steps (a decoder's position), shared by every dispatch of kernels with the same fields.
 */
export class WgslUniforms {
  readonly fields: string;
  private buffer: GpuBuffer | undefined;

  constructor(
    private readonly kernel: WgslKernel,
    values: Record<string, number>,
  ) {
    this.fields = JSON.stringify(kernel.uniforms);
    const b = gpuBackend();
    const data = packUniforms(kernel, values);
    this.buffer = b.bufferManager.acquireBuffer(data.byteLength, USAGE_UNIFORM | USAGE_COPY_DST);
    b.device.queue.writeBuffer(this.buffer, 0, data, 0, data.byteLength);
  }

  get gpuBuffer(): GpuBuffer {
    if (!this.buffer) throw new Error(`WGSL kernel ${this.kernel.name}: its uniforms are disposed`);
    return this.buffer;
  }

  /** New values, seen by dispatches recorded from now on (work recorded before is submitted first). */
  set(values: Record<string, number>): void {
    const data = packUniforms(this.kernel, values);
    flushWgsl();
    gpuBackend().device.queue.writeBuffer(this.gpuBuffer, 0, data, 0, data.byteLength);
  }

  dispose(): void {
    if (!this.buffer) return;
    // Back to tfjs's pool after the commands using it are submitted: the queue runs them first.
    flushWgsl();
    gpuBackend().bufferManager.releaseBuffer(this.buffer);
    this.buffer = undefined;
  }
}

/** Writes `data` over a tensor's GPU buffer, for tensors the caller made and owns alone (as `inouts`). */
export function writeWgslTensor(t: tf.Tensor, data: Int32Array | Float32Array): void {
  if (t.isDisposed) throw new Error(`writeWgslTensor: the tensor [${t.shape}] is disposed`);
  if (data.length !== t.size)
    throw new Error(`writeWgslTensor: ${data.length} values for a tensor of ${t.size} [${t.shape}]`);
  const b = gpuBackend();
  b.uploadToGPU(t.dataId);
  flushWgsl();
  forgetCpuCopies(b, [t]);
  b.device.queue.writeBuffer(
    tensorBuffer(b, t, 'writeWgslTensor'),
    0,
    data.buffer as ArrayBuffer,
    data.byteOffset,
    data.byteLength,
  );
}

/** Input (or in-place tensor) `i` of a dispatch of `k` in its GPU buffer, uploaded if it is on the host. */
function inputBuffer(b: WebgpuBackendLike, k: WgslKernel, t: tf.Tensor, i: number): GpuBuffer {
  if (t.isDisposed) throw new Error(`WGSL kernel ${k.name}: input ${i} [${t.shape}] is disposed`);
  if (t.size === 0) throw new Error(`WGSL kernel ${k.name}: input ${i} is empty [${t.shape}]`);
  b.uploadToGPU(t.dataId);
  return tensorBuffer(b, t, `WGSL kernel ${k.name}`);
}

function tensorBuffer(b: WebgpuBackendLike, t: tf.TensorInfo, what: string): GpuBuffer {
  const r = b.tensorMap.get(t.dataId).resource;
  if (!r || typeof (r as GpuBuffer).size !== 'number')
    throw new Error(`${what}: a tensor is not in a GPU buffer (a texture or external resource)`);
  return r as GpuBuffer;
}

/**
 * A dispatch whose pipeline and bind group are made once and recorded any number of times: a decode
 * step re-records the same ~75 dispatches over the same buffers, and making a bind group, output
 * buffers and a uniform buffer each time was over half of the host's ~85 us a dispatch. It writes only
 * `inouts` (tensors the caller made and owns alone); its uniforms are a WgslUniforms the caller owns.
 */
export interface BoundDispatch {
  readonly kernel: WgslKernel;
  readonly tensors: readonly tf.Tensor[];
  /** The tensors it writes (the tail of `tensors`). */
  readonly inouts: readonly tf.Tensor[];
  readonly uniforms: WgslUniforms | undefined;
  readonly workgroups: readonly [number, number?, number?];
  /** The tensors' data ids when the bind group was made: a reassigned variable has a new one. */
  ids: object[];
  bindGroup: unknown;
  pipeline: GpuPipeline | undefined;
}

export function bindWgsl(d: {
  kernel: WgslKernel;
  inputs: tf.Tensor[];
  inouts?: tf.Tensor[];
  uniforms?: WgslUniforms;
  workgroups: [number, number?, number?];
}): BoundDispatch {
  const k = d.kernel;
  if (
    k.uniforms.length > 0 !== (d.uniforms !== undefined) ||
    (d.uniforms && d.uniforms.fields !== JSON.stringify(k.uniforms))
  )
    throw new Error(`WGSL kernel ${k.name}: bound with uniforms that are not its own fields`);
  const bd: BoundDispatch = {
    kernel: k,
    tensors: [...d.inputs, ...(d.inouts ?? [])],
    inouts: d.inouts ?? [],
    uniforms: d.uniforms,
    workgroups: d.workgroups,
    ids: [],
    bindGroup: undefined,
    pipeline: undefined,
  };
  rebind(gpuBackend(), bd);
  return bd;
}

function rebind(b: WebgpuBackendLike, bd: BoundDispatch): void {
  const k = bd.kernel;
  const entries = bd.tensors.map((t, i) => ({ binding: i, resource: { buffer: inputBuffer(b, k, t, i) } }));
  if (bd.uniforms) entries.push({ binding: entries.length, resource: { buffer: bd.uniforms.gpuBuffer } });
  bd.pipeline = pipelineFor(b, k);
  bd.bindGroup = b.device.createBindGroup({ layout: bd.pipeline.getBindGroupLayout(0), entries });
  bd.ids = bd.tensors.map((t) => t.dataId as object);
}

/** Records bound dispatches in order, remaking a bind group whose tensors changed buffers (an assigned weight). */
export function recordBound(list: readonly BoundDispatch[]): void {
  const b = gpuBackend();
  for (const bd of list) {
    const { tensors, ids } = bd;
    // Checked at each record, not only when bound: a weight disposed since would be a read of a
    // recycled buffer (rebind throws), and an assigned one would be its old value.
    for (let i = 0; i < tensors.length; i++)
      if (tensors[i]!.dataId !== ids[i] || tensors[i]!.isDisposed) {
        rebind(b, bd);
        break;
      }
    // Disposed uniforms' buffer is back in tfjs's pool: refused (the getter throws), like a disposed input.
    if (bd.uniforms) void bd.uniforms.gpuBuffer;
    for (const id of bd.ids) b.commandQueueOwnedIds.add(id);
    forgetCpuCopies(b, bd.inouts);
    record(b, bd.kernel.name, bd.pipeline!, bd.bindGroup, bd.workgroups);
  }
}
