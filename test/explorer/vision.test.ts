import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine, tf } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { tokenLogprobs } from '../../backend/model/logprobs.js';
import { patchify, patchTensor } from '../../backend/model/patchify.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import { workflowSampling } from '../../backend/explorer/workflow.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import { builtinTasksets } from '../../backend/explorer/tasksets/index.js';
import { drawImage } from '../../backend/explorer/tasksets/vision.js';
import type { TaskImage } from '../../backend/core/types.js';

await initEngine();

test('patchify: tiles left to right, top to bottom; pixels (row, column, channel) inside a tile, scaled to 0..1', () => {
  const img: TaskImage = { width: 8, height: 8, rgb: new Array(8 * 8 * 3).fill(0) };
  const at = (x: number, y: number) => (y * 8 + x) * 3;
  img.rgb[at(5, 2) + 1] = 255; // green at x=5, y=2: tile (px 1, py 0), inside at (x 1, y 2)
  const p = patchify(img, 4);
  assert.equal(p.length, 4 * 48);
  const idx = 1 * 48 + (2 * 4 + 1) * 3 + 1;
  assert.equal(p[idx], 1);
  assert.equal(
    p.reduce((a, b) => a + b, 0),
    1,
  );
  assert.throws(() => patchify({ width: 2, height: 2, rgb: [1, 2, 3] }, 2), /expected 2x2x3/);
});

test('vision images: the drawn shapes have the colour and count the answer says', () => {
  const tasks = builtinTasksets.get('vision').generate(30, 1, 'train');
  for (const t of tasks) {
    const { rgb } = t.image!;
    const lit = rgb
      .filter((_, i) => i % 3 === 0)
      .filter((_, k) => rgb[k * 3]! + rgb[k * 3 + 1]! + rgb[k * 3 + 2]! > 0).length;
    assert.ok(lit > 0);
    if (/How many/.test(t.prompt!)) assert.ok(Number(t.answer) >= 1 && Number(t.answer) <= 4);
  }
  const red = drawImage([{ shape: 'line', colour: 'red', x: 0, y: 0 }]);
  assert.deepEqual(red.rgb.slice((1 * 16 + 0) * 3, (1 * 16 + 0) * 3 + 3), [220, 30, 30]);
});

test('vision workflow: the image prefix drives generation, and tokenLogprobs with the same prefix reproduces the behaviour log-probs', async () => {
  const gen = builtinTasksets.get('vision');
  const tasks = gen.generate(3, 2, 'train');
  const tok = CharTokenizer.train(tasks.flatMap((t) => [t.prompt!, gen.solve(t)]));
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: 16,
    nLayers: 1,
    nHeads: 2,
    nKvHeads: 1,
    dFF: 32,
    maxSeqLen: 128,
    vision: { patchSize: 4, maxPatches: 16 },
    initStd: 0.3,
  });
  // initStd 0.3: a fresh 0.02-scale model has near-uniform outputs that hardly depend on any input.
  const model = new Transformer(cfg, 4);
  try {
    const exps = await workflows.get('vision').run(tasks, {
      model: new LocalRolloutModel(model, tok, 2),
      reward: rewardFns.get(gen.reward),
      runId: 'r',
      repeatTimes: 2,
      step: 0,
      seed: 3,
      split: 'train',
      sampling: workflowSampling({ maxNewTokens: 6, temperature: 1, topK: 0, topP: 1 }, tok),
    });
    assert.equal(exps.length, 6);
    for (const e of exps) {
      assert.equal(e.status === 'infra_failure', false);
      assert.equal(e.modelVersion, 2);
      const image = e.metadata!.image as TaskImage;
      assert.deepEqual(image, tasks.find((t) => t.id === e.taskId)!.image);
      // What the trainer does: rebuild the prefix from the stored image and score the sequence.
      const ids = [...e.promptTokens, ...e.responseTokens];
      const lp = tf.tidy(() => {
        const prefix = model.embedPatches(patchTensor([image], 4));
        return tokenLogprobs(model, tf.tensor2d([ids], [1, ids.length], 'int32'), { prefix }).logprobs;
      });
      const noPrefix = tf.tidy(() => tokenLogprobs(model, tf.tensor2d([ids], [1, ids.length], 'int32')).logprobs);
      const withP = Array.from(await lp.data()).slice(e.promptTokens.length - 1);
      const without = Array.from(await noPrefix.data()).slice(e.promptTokens.length - 1);
      lp.dispose();
      noPrefix.dispose();
      e.logprobs.forEach((b, i) =>
        assert.ok(Math.abs(b - withP[i]!) < 1e-3, `token ${i}: behaviour ${b} vs recomputed ${withP[i]}`),
      );
      assert.ok(
        e.logprobs.some((b, i) => Math.abs(b - without[i]!) > 1e-3),
        `the prefix changes the log-probs: ${JSON.stringify(e.logprobs)} vs ${JSON.stringify(without.slice(0, e.logprobs.length))}`,
      );
    }
  } finally {
    model.dispose();
  }
});
