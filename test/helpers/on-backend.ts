// Runs a test body on one tfjs engine and switches back after: the webgpu tests compare the same
// computation on webgpu and cpu (tfjs moves a model's variables between engines on first use).
import { initEngine, tf } from '../../backend/model/engine.js';
import { type GpuProbe, probeGpuAdapter } from '../../backend/model/webgpu.js';

export async function on<T>(backend: 'webgpu' | 'cpu', fn: () => Promise<T> | T): Promise<T> {
  const was = tf.getBackend();
  await tf.setBackend(backend);
  try {
    return await fn();
  } finally {
    await tf.setBackend(was);
  }
}

/**
 * Starts the webgpu engine for a test file: on the GPU where there is one, else on SwiftShader's
 * Vulkan driver (CI). `skip` is node:test's option: false, or why there is no adapter. The env var is
 * set here so child processes the file starts find SwiftShader the same way.
 */
export async function startWebgpu(): Promise<{ skip: false | string; probe: GpuProbe }> {
  process.env.RFT_WEBGPU_SWIFTSHADER = '1';
  const probe = await probeGpuAdapter();
  if (!probe.adapter) return { skip: `no WebGPU adapter: ${probe.why}`, probe };
  await initEngine({ backend: 'webgpu' });
  return { skip: false, probe };
}
