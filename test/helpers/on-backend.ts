// Runs a test body on one tfjs engine and switches back after: the webgpu tests compare the same
// computation on webgpu and cpu (tfjs moves a model's variables between engines on first use).
import { tf } from '../../backend/model/engine.js';

export async function on<T>(backend: 'webgpu' | 'cpu', fn: () => Promise<T> | T): Promise<T> {
  const was = tf.getBackend();
  await tf.setBackend(backend);
  try {
    return await fn();
  } finally {
    await tf.setBackend(was);
  }
}
