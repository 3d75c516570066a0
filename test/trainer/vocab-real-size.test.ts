// Issue 23 item 1 at real size: a Qwen2-layout model with the real Qwen tokenizer's vocabulary
// (151,669) trains a step at the template's batch (16 rows: 4 tasks x 4 samples, MIX with expert
// rows, 64 new tokens) without a heap abort. The logits of that batch alone are 16 x 79 x 151,669
// floats (767 MB; the unchunked step holds several such arrays and aborted the 4 GiB wasm heap);
// the chunked head keeps them to one chunk, so the whole batch trains as one micro-batch. The model
// is tiny (hidden 16, one layer) so the step is mostly the head's products and stays fast.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tf, initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { loadTokenizer } from '../../backend/model/tokenizer/io.js';
import { tokenLogprobs } from '../../backend/model/logprobs.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import { Rng } from '../../backend/core/rng.js';
import type { Experience } from '../../backend/core/types.js';
import { makeHfModel } from '../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-vocab-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

test('Qwen2 layout, vocabulary 151,669, real Qwen tokenizer: a MIX step at 16 x (prompt + 64 tokens) trains in one micro-batch', async () => {
  const dir = makeHfModel(join(root, 'qwen2'), {
    architecture: 'Qwen2ForCausalLM',
    tokenizer: 'qwen3',
    vocab: 151669,
    hidden: 16,
    layers: 1,
    heads: 2,
    kvHeads: 1,
    intermediate: 32,
    tied: true,
  });
  const { model } = loadCheckpoint(dir);
  const tok = loadTokenizer(dir);
  assert.equal(model.config.vocabSize, 151669);
  const reference = model.clone();
  const trainer = new Trainer(model, makeObjective('mix', {}), { lr: 1e-2, padId: tok.padId }, reference);
  const rng = new Rng(2);
  const prompts = ['Compute 17 + 25.', 'Reverse the word "tensor".', 'What is the capital of France?', 'Sort 3, 1, 2.'];
  const exps: Experience[] = Array.from({ length: 16 }, (_, b) => {
    const promptTokens = tok.encode(prompts[b >> 2]!);
    // Response ids across the whole vocabulary, the last rows included (the head's last chunk).
    const responseTokens = Array.from({ length: 64 }, (_, j) => (j === 0 ? 151668 : rng.int(0, 151669)));
    return {
      id: `e${b}`,
      taskId: `t${b >> 2}`,
      groupId: `g${b >> 2}`,
      runId: 'r',
      source: b % 4 === 0 ? 'expert' : 'usual',
      promptTokens,
      promptText: prompts[b >> 2]!,
      responseTokens,
      responseText: '',
      actionMask: responseTokens.map(() => 1),
      logprobs: responseTokens.map(() => -12),
      modelVersion: 0,
      reward: b % 2,
      advantages: responseTokens.map(() => (b % 2 ? 1 : -1)),
      status: 'ok',
      useCount: 0,
      createdAt: 0,
    };
  });
  const probe = tf.tensor2d(
    [[...exps[0]!.promptTokens, ...exps[0]!.responseTokens]],
    [1, exps[0]!.promptTokens.length + 64],
    'int32',
  );
  const before = tf.tidy(() => (tokenLogprobs(model, probe).logprobs.dataSync() as Float32Array).slice());
  const m = await trainer.trainStep(exps, 0);
  assert.equal(m.micro_batch, 16, 'the whole batch in one micro-batch');
  assert.ok(Number.isFinite(m.loss) && m.grad_norm > 0 && Number.isFinite(m.grad_norm), JSON.stringify(m));
  const after = tf.tidy(() => (tokenLogprobs(model, probe).logprobs.dataSync() as Float32Array).slice());
  // The expert row (row 0) is trained toward: its response log-probs rise on average.
  const mean = (a: Float32Array) => a.slice(exps[0]!.promptTokens.length - 1).reduce((x, y) => x + y, 0) / 64;
  assert.ok(mean(after) > mean(before), `expert row's mean log-prob ${mean(before)} -> ${mean(after)}`);
  probe.dispose();
  trainer.dispose();
  reference.dispose();
  model.dispose();
});
