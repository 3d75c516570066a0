// tf.addN on the webgpu engine past the per-stage storage-buffer limit: tfjs 4.22's own kernel binds
// every input in one shader and fails validation (zeros come back); backend/model/webgpu-kernels.ts
// sums in chunks. Runs on SwiftShader without a GPU; skipped, with the reason, where Dawn finds no adapter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startWebgpu } from '../helpers/on-backend.js';
import { tf } from '../../backend/model/engine.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

const { skip } = await startWebgpu();

async function addN(backend: 'webgpu' | 'cpu', values: Float32Array[], shape: number[]): Promise<Float32Array> {
  const was = tf.getBackend();
  await tf.setBackend(backend);
  try {
    const xs = values.map((v) => tf.tensor(v, shape));
    const y = tf.addN(xs);
    const out = (await y.data()) as Float32Array;
    tf.dispose([y, ...xs]);
    return out;
  } finally {
    await tf.setBackend(was);
  }
}

test('tf.addN of 40 tensors on webgpu = cpu (more inputs than one shader stage may bind)', { skip }, async () => {
  const shape = [3, 5];
  const values = Array.from({ length: 40 }, (_, i) =>
    Float32Array.from({ length: 15 }, (_, j) => Math.sin(i * 31 + j * 7)),
  );
  const cpu = await addN('cpu', values, shape);
  assertF32Close(await addN('webgpu', values, shape), cpu, ULPS.forward, 'addN of 40');
});

test('tf.addN on webgpu at every count around the chunk size, leaving no buffer behind', { skip }, async () => {
  const perStage = (tf.backend() as unknown as { device: { limits: Record<string, number> } }).device.limits
    .maxStorageBuffersPerShaderStage!;
  const before = tf.memory().numDataBuffers;
  // The counts where a chunk fills exactly, spills by one, and a last chunk holds one input.
  for (const n of [1, 2, perStage - 1, perStage, perStage + 1, 2 * perStage - 3, 2 * perStage - 2, 2 * perStage - 1]) {
    const values = Array.from({ length: n }, (_, i) => Float32Array.of(i + 1, -2 * i, 0.5));
    const got = await addN('webgpu', values, [3]);
    assert.deepEqual([...got], [(n * (n + 1)) / 2, -n * (n - 1), 0.5 * n], `addN of ${n}`);
  }
  assert.equal(tf.memory().numDataBuffers, before, 'the partial sums are freed');
});
