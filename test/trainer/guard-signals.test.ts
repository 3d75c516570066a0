// The collapse guard's signals in every train step (trainer.ts): ref_kl = the mean of (behaviour
// log-prob - reference log-prob) over the usual rows' trained tokens (expert rows and rows without
// behaviour log-probs left out), batch_reward = the usual rows' mean reward, sampled_entropy = their
// tokens' mean -log-prob.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import type { Experience } from '../../backend/core/types.js';

await initEngine();
const tok = CharTokenizer.train(['say abcd']);

function row(id: string, answer: string, source: 'usual' | 'expert', reward: number): Experience {
  const p = encodePrompt(tok, taskMessages(`say ${answer}`));
  const r = encodeResponse(tok, answer);
  return {
    id,
    taskId: 't',
    groupId: 'g',
    runId: 'r',
    source,
    promptTokens: p,
    promptText: '',
    responseTokens: r,
    responseText: answer,
    actionMask: r.map(() => 1),
    logprobs: [],
    advantages: r.map(() => reward - 0.5),
    modelVersion: 0,
    reward,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
  };
}

test('ref_kl, batch_reward and sampled_entropy of a step', async () => {
  const model = new Transformer(
    makeConfig({ vocabSize: tok.vocabSize, dModel: 16, nLayers: 1, nHeads: 2, nKvHeads: 2, dFF: 32, maxSeqLen: 32 }),
    3,
  );
  const reference = model.clone();
  const trainer = new Trainer(
    model,
    makeObjective('grpo', {}),
    { lr: 1e-3, padId: tok.padId, microBatchSize: 0 },
    reference,
  );
  const usual = [row('u1', 'ab', 'usual', 1), row('u2', 'cd', 'usual', 0)];
  // Behaviour log-probs: the reference's own plus 0.5 per token, so the log-ratio is 0.5 on every trained token.
  const ref = await trainer.responseLogprobs(usual, reference);
  usual.forEach((e, i) => (e.logprobs = ref[i]!.map((x) => x + 0.5)));
  const noLogprobs = row('u3', 'a', 'usual', 1);
  const expert = row('e1', 'bc', 'expert', 1);
  expert.logprobs = expert.responseTokens.map(() => -9);
  const m = await trainer.trainStep([...usual, noLogprobs, expert], 0);
  assert.ok(Math.abs(m.ref_kl! - 0.5) < 1e-4, `ref_kl ${m.ref_kl}`);
  // Every usual row counts in the reward; the entropy estimate from the rows that carry log-probs.
  assert.ok(Math.abs(m.batch_reward! - 2 / 3) < 1e-9, `batch_reward ${m.batch_reward}`);
  const lps = usual.flatMap((e) => e.logprobs);
  assert.ok(
    Math.abs(m.sampled_entropy! - -lps.reduce((a, b) => a + b, 0) / lps.length) < 1e-6,
    `sampled_entropy ${m.sampled_entropy}`,
  );
  trainer.dispose();
  model.dispose();
  reference.dispose();
});
