// Kernel overrides for the webgpu backend that fix tfjs-backend-webgpu's own (not fused ops: those
// are in wgsl/ and can be switched off; these are always on, as the originals give wrong answers).
import * as tf from '@tensorflow/tfjs-core';

interface WebgpuBackendLike {
  device: { limits: Record<string, number> };
  disposeData(dataId: tf.DataId, force?: boolean): boolean;
}

/** The WebGPU spec's default per-stage limit (tfjs does not ask the adapter for more). */
const DEFAULT_STORAGE_BUFFERS = 8;

let installed = false;

/**
 * AddN in chunks. tfjs 4.22's webgpu AddN binds every input, and its output, as a storage buffer of
 * one shader: past the device's per-stage limit (8 by default, so 8 or more inputs) the pipeline fails
 * validation and the sum comes back as zeros or garbage, with only a console warning. Here each
 * dispatch of the original kernel gets at most limit - 1 buffers of inputs, the running sum first.
 */
export function installWebgpuOverrides(): void {
  if (installed || !tf.getKernel('AddN', 'webgpu')) return;
  const original = tf.getKernel('AddN', 'webgpu')!.kernelFunc;
  tf.unregisterKernel('AddN', 'webgpu');
  tf.registerKernel({
    kernelName: 'AddN',
    backendName: 'webgpu',
    kernelFunc: (args) => {
      const inputs = args.inputs as unknown as tf.TensorInfo[];
      const backend = args.backend as unknown as WebgpuBackendLike;
      const perStage = backend.device.limits.maxStorageBuffersPerShaderStage ?? DEFAULT_STORAGE_BUFFERS;
      const chunk = Math.max(2, perStage - 1); // one binding is the output
      if (inputs.length <= chunk) return original(args);
      let sum = original({ ...args, inputs: inputs.slice(0, chunk) as unknown as tf.NamedTensorInfoMap });
      for (let i = chunk; i < inputs.length; i += chunk - 1) {
        const part = [sum as tf.TensorInfo, ...inputs.slice(i, i + chunk - 1)];
        const next = original({ ...args, inputs: part as unknown as tf.NamedTensorInfoMap });
        // The partial sum is this kernel's own intermediate: no tensor refers to it.
        backend.disposeData((sum as tf.TensorInfo).dataId);
        sum = next;
      }
      return sum;
    },
  });
  installed = true;
}
