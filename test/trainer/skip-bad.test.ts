// The trainer never dies on one bad experience: a too-long, rejected or malformed row in a batch is
// skipped and counted (skipped_experiences), the rest of the batch is trained on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import { sequenceProblem } from '../../backend/core/sequence-check.js';
import type { Experience } from '../../backend/core/types.js';

await initEngine();
const tok = CharTokenizer.train(['abcdefghijklmnopqrstuvwxyz ']);

function expert(id: string, prompt: string, answer: string, extra: Partial<Experience> = {}): Experience {
  const p = encodePrompt(tok, taskMessages(prompt));
  const r = encodeResponse(tok, answer);
  return {
    id,
    taskId: 't',
    groupId: id,
    runId: 'r',
    source: 'expert',
    promptTokens: p,
    promptText: prompt,
    responseTokens: r,
    responseText: answer,
    actionMask: r.map(() => 1),
    logprobs: [],
    modelVersion: -1,
    reward: 1,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
    ...extra,
  };
}

test('a batch with a too-long, a rejected and a malformed expert trains on the good rows and counts the skipped', async () => {
  const model = new Transformer(
    makeConfig({ vocabSize: tok.vocabSize, dModel: 16, nLayers: 1, nHeads: 2, nKvHeads: 2, dFF: 32, maxSeqLen: 24 }),
    1,
  );
  const trainer = new Trainer(model, makeObjective('sft'), { lr: 1e-2, padId: tok.padId });
  const good = expert('good', 'say a', 'a');
  const long = expert('long', 'say a', 'a'.repeat(40));
  const rejected = expert('rej', 'say b', 'b', { feedback: { rejected: true } });
  const bad = { ...expert('bad', 'say c', 'c'), actionMask: [1] };
  const m = await trainer.trainStep([good, long, rejected, bad]);
  assert.equal(m.skipped_experiences, 3);
  assert.equal(m.expert_rows, 1);
  assert.ok(m.tokens > 0 && Number.isFinite(m.loss));
  // Nothing trainable left: the step still completes (no update), it does not throw.
  const none = await trainer.trainStep([long]);
  assert.equal(none.skipped_experiences, 1);
  assert.equal(none.tokens, 0);
  trainer.dispose();
});

test('sequenceProblem names the limit and by how much it is exceeded', () => {
  const e = expert('x', 'say a', 'a'.repeat(30));
  const why = sequenceProblem(e, { maxSeqLen: 24 });
  assert.match(why!, /max_seq_len 24/);
  assert.match(why!, /shorten it by \d+ tokens/);
  assert.equal(sequenceProblem(expert('y', 'say a', 'a'), { maxSeqLen: 24, vocabSize: tok.vocabSize }), null);
  assert.match(
    sequenceProblem(
      { ...expert('z', 'a', 'a'), responseTokens: [9999], actionMask: [1] },
      { vocabSize: tok.vocabSize },
    )!,
    /vocabulary/,
  );
});
