import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine, tf } from '../../backend/model/engine.js';

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
