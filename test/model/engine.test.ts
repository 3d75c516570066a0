import { test } from 'node:test';
import assert from 'node:assert/strict';
import { engineLabel, initEngine, tf } from '../../backend/model/engine.js';
import { adapterName } from '../../backend/model/webgpu.js';

test('engine falls back to an available backend and logs why', async () => {
  const info = await initEngine();
  assert.ok(['wasm', 'cpu', 'tensorflow', 'tensorflow-gpu'].includes(info.backend));
  assert.equal(tf.getBackend(), info.backend === 'tensorflow-gpu' ? 'tensorflow' : info.backend);
  if (info.backend === 'wasm') {
    // tfjs-node cannot install on this machine; the reason must say so.
    assert.match(info.reason, /fallback|forced|first/);
  }
  const y = tf.matMul(tf.tensor2d([[1, 2]]), tf.tensor2d([[3], [4]]));
  assert.deepEqual(Array.from(await y.data()), [11]);
});

test('engineLabel: the engine in a few words, as the dashboard shows it', () => {
  const base = { reason: '', tried: [] };
  assert.equal(
    engineLabel({ ...base, backend: 'wasm', matmul: { kernel: 'native-blas', detail: '' } }),
    'wasm + native BLAS',
  );
  assert.equal(
    engineLabel({ ...base, backend: 'wasm', matmul: { kernel: 'wasm', detail: '' } }),
    'wasm (its own matmul)',
  );
  assert.equal(engineLabel({ ...base, backend: 'cpu' }), 'cpu (plain JavaScript)');
  const adapter = {
    vendor: 'nvidia',
    architecture: 'hopper',
    description: 'NVIDIA H200',
    fallback: false,
    features: [],
  };
  assert.equal(
    engineLabel({ ...base, backend: 'webgpu', adapter: { ...adapter, name: adapterName(adapter) } }),
    'webgpu: nvidia hopper (NVIDIA H200)',
  );
});
