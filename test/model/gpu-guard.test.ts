// The webgpu engine's guard (gpu-guard.ts), on SwiftShader where there is no GPU (its largest buffer is
// 1 GiB): a model with a weight over the GPU's largest buffer is refused before anything is allocated,
// naming the weight; a tensor over it made anyway makes the next read (and every one after) throw,
// where without the guard it reads back as zeros. Skipped, with the reason, where Dawn finds no adapter.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startWebgpu } from '../helpers/on-backend.js';
import { tf } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { gpuFailure, largestGpuBuffer } from '../../backend/model/gpu-guard.js';
import { InfrastructureError, InputError } from '../../backend/core/errors.js';

const { skip } = await startWebgpu();

const QWEN_VOCAB = 151_936;
const qwenShaped = (dModel: number) =>
  makeConfig({ vocabSize: QWEN_VOCAB, dModel, nLayers: 1, nHeads: dModel / 64, nKvHeads: 1, dFF: 128, maxSeqLen: 16 });

test("a weight over the GPU's largest buffer is refused before anything is allocated", { skip }, () => {
  const max = largestGpuBuffer()!;
  // The narrowest Qwen-vocabulary embedding table over the limit (SwiftShader: 151,936 x 1,792 at 1 GiB).
  const over = Math.ceil(max.bytes / 4 / QWEN_VOCAB / 64) * 64;
  const before = tf.memory().numBytes;
  assert.throws(
    () => new Transformer(qwenShaped(over), 0, { init: false }),
    (e: Error) =>
      e instanceof InputError &&
      e.message.includes(`model.embed_tokens.weight [${QWEN_VOCAB}, ${over}]`) &&
      e.message.includes(max.limit) &&
      /cpu engine/.test(e.message),
  );
  assert.equal(tf.memory().numBytes, before, 'nothing was allocated');
  // The real vocabulary at a width that fits builds.
  const m = new Transformer(qwenShaped(64), 0, { init: false });
  assert.equal(m.p('model.embed_tokens.weight').shape[0], QWEN_VOCAB);
  m.dispose();
});

test('after a GPU error every read throws, naming it, instead of returning zeros', { skip }, async () => {
  const ok = tf.tensor1d([1, 2, 3]);
  assert.deepEqual(Array.from(await ok.data()), [1, 2, 3]);
  assert.equal(gpuFailure(), undefined);
  // One tensor over the largest buffer (made on the GPU by a fill kernel: nothing that size on the host).
  const n = Math.floor(largestGpuBuffer()!.bytes / 4) + 1024;
  const sum = tf.tidy(() => tf.sum(tf.add(tf.fill([n], 1), 1)));
  await assert.rejects(
    sum.data(),
    (e: Error) =>
      e instanceof InfrastructureError &&
      /exceeds the max buffer size limit/.test(e.message) &&
      /cpu engine/.test(e.message),
  );
  // The device stays failed: a read of anything computed since throws too.
  await assert.rejects(tf.add(ok, 1).data(), InfrastructureError);
  assert.match(gpuFailure()!, /^GPUValidationError: /);
});
