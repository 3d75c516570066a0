// Dawn (the webgpu engine) reports a failed allocation or an invalid command as an event, not an
// exception: the command is skipped and what it should have written reads back as zeros. A model or
// batch too large for the GPU would then train on zeros, or sample from them, with only a console line.
// The guard refuses a model whose weights exceed the GPU's largest buffer before anything is allocated,
// and watches the device: after an error every read from the GPU throws, so no result computed since
// reaches a loss, a log-prob or a checkpoint.
import * as tf from '@tensorflow/tfjs-core';
import { InfrastructureError, InputError } from '../core/errors.js';

interface GpuErrorEvent {
  error?: { message?: string; constructor?: { name?: string } };
}
interface GuardedDevice {
  limits: Record<string, number>;
  addEventListener(type: 'uncapturederror', fn: (e: GpuErrorEvent) => void): void;
  lost?: Promise<{ reason?: string; message?: string }>;
}
interface GuardedBackend {
  device: GuardedDevice;
  read(dataId: object): Promise<unknown>;
}

interface Failure {
  first: string;
  count: number;
}
const failures = new WeakMap<object, Failure>();
const watched = new WeakSet<object>();

const gib = (b: number) => `${(b / 2 ** 30).toFixed(2)} GiB`;

/** The largest buffer a kernel can bind on the current webgpu device, and the limit that sets it. */
export function largestGpuBuffer(): { bytes: number; limit: string } | undefined {
  if (tf.getBackend() !== 'webgpu') return undefined;
  const { limits } = (tf.backend() as unknown as GuardedBackend).device;
  const buffer = limits.maxBufferSize ?? Infinity;
  const binding = limits.maxStorageBufferBindingSize ?? Infinity;
  return binding < buffer
    ? { bytes: binding, limit: 'maxStorageBufferBindingSize' }
    : { bytes: buffer, limit: 'maxBufferSize' };
}

/**
 * On the webgpu engine, an InputError naming the first f32 weight larger than the GPU's largest buffer
 * (it could not be allocated, and every product with it would read zeros). Elsewhere nothing.
 */
export function assertWeightsFitGpu(weights: Iterable<{ name: string; shape: number[] }>): void {
  const max = largestGpuBuffer();
  if (!max) return;
  for (const w of weights) {
    const bytes = w.shape.reduce((a, b) => a * b, 4);
    if (bytes > max.bytes)
      throw new InputError(
        `the model's ${w.name} [${w.shape.join(', ')}] takes ${gib(bytes)} (f32), more than this GPU's largest buffer (${max.limit} ${gib(max.bytes)}) on the webgpu engine: train this model on the cpu engine (rftStudio.engine / RFT_BACKEND: cpu)`,
      );
  }
}

/** The first error, with how many followed. */
const describe = (f: Failure) => `${f.first}${f.count > 1 ? ` (and ${f.count - 1} error(s) after it)` : ''}`;

/** The device's first error since the engine started, with how many followed; undefined while it is sound. */
export function gpuFailure(): string | undefined {
  if (tf.getBackend() !== 'webgpu') return undefined;
  const f = failures.get((tf.backend() as unknown as GuardedBackend).device);
  return f && describe(f);
}

/** Watch the webgpu backend's device (engine.ts, once the backend is set). */
export function watchGpuDevice(backend: unknown): void {
  const b = backend as GuardedBackend;
  const device = b.device;
  if (watched.has(device)) return;
  watched.add(device);
  const record = (message: string) => {
    const f = failures.get(device);
    if (f) f.count++;
    else failures.set(device, { first: message, count: 1 });
  };
  device.addEventListener('uncapturederror', (e) => {
    const kind = e.error?.constructor?.name ?? 'GPUError';
    record(`${kind}: ${(e.error?.message ?? 'no message').split('\n')[0]}`);
  });
  void device.lost?.then((info) => record(`device lost (${info.reason ?? 'unknown'}): ${info.message ?? ''}`));
  const read = b.read.bind(b);
  b.read = async (dataId) => {
    const values = await read(dataId);
    const f = failures.get(device);
    if (f) throw gpuError(f, device.limits);
    return values;
  };
}

function gpuError(f: Failure, limits: Record<string, number>): InfrastructureError {
  return new InfrastructureError(
    `the GPU (webgpu engine) failed: ${describe(f)}. What it computed since is not used. ` +
      `A tensor larger than its largest buffer (maxBufferSize ${gib(limits.maxBufferSize ?? 0)}, ` +
      `maxStorageBufferBindingSize ${gib(limits.maxStorageBufferBindingSize ?? 0)}) or out of GPU memory: ` +
      'use smaller micro-batches (trainer.micro_batch_size), LoRA (model.lora), a smaller model, or the cpu engine; ' +
      'the engine stays unusable in this process',
  );
}
