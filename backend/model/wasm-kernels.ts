// Kernel overrides for the wasm backend that need no native code.
import * as tf from '@tensorflow/tfjs-core';

interface WasmBackendLike {
  incRef(dataId: unknown): void;
}

let installed = false;

/**
 * Identity shares the input's buffer (as the cpu backend does) instead of copying it: tfjs tensors
 * are immutable and variables swap buffers on assign, so sharing is safe. The engine clones every
 * tensor a gradient saves through Identity, so the copy cost about 6% of a training step.
 */
export function installWasmKernels(): void {
  if (installed || tf.getBackend() !== 'wasm' || !tf.getKernel('Identity', 'wasm')) return;
  const original = tf.getKernel('Identity', 'wasm')!.kernelFunc;
  tf.unregisterKernel('Identity', 'wasm');
  tf.registerKernel({
    kernelName: 'Identity',
    backendName: 'wasm',
    kernelFunc: (args) => {
      const { inputs, backend } = args;
      const x = inputs.x as tf.TensorInfo;
      if (x.dtype === 'string') return original(args) as tf.TensorInfo;
      (backend as unknown as WasmBackendLike).incRef(x.dataId);
      return { dataId: x.dataId, shape: x.shape, dtype: x.dtype };
    },
  });
  installed = true;
}
