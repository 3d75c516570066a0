// Helpers for native ops that work in place on the wasm backend's heap: where a tensor's data
// lives, and new output tensors allocated there.
import * as tf from '@tensorflow/tfjs-core';

interface WasmBackendLike {
  wasm: { HEAPU8: Uint8Array };
  dataIdMap: { get(id: unknown): { memoryOffset: number | null } | undefined };
  makeOutput(shape: number[], dtype: tf.DataType): tf.TensorInfo;
}

function wasm(): WasmBackendLike {
  return tf.backend() as unknown as WasmBackendLike;
}

/** The wasm memory; read it after allocating outputs (an allocation can grow and replace it). */
export function heap(): ArrayBuffer {
  return wasm().wasm.HEAPU8.buffer as ArrayBuffer;
}

/** Byte offset of a tensor's data in the heap. */
export function offsetOf(t: tf.Tensor): number {
  const o = wasm().dataIdMap.get(t.dataId)?.memoryOffset;
  if (o == null) throw new Error('native op: tensor is not in the wasm heap');
  return o;
}

/** A new tensor of `shape` whose (uninitialised) data the native op writes. */
export function outputTensor(shape: number[], dtype: tf.DataType = 'float32'): tf.Tensor {
  return tf.engine().makeTensorFromTensorInfo(wasm().makeOutput(shape, dtype));
}
