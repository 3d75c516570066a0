// Rollout worker threads with an imported model's tokenizer (the real Qwen3 files): the worker
// rebuilds the same tokenizer (ids, text, stop ids, chat template) from what the pool sends. Before,
// the pool sent the bare tokenizer.json and the worker's own loader refused it
// ("field 'model.continuing_subword_prefix': not supported").
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { generate } from '../../backend/model/generate.js';
import { encodePrompt, stopTokens, taskMessages } from '../../backend/model/chat.js';
import { tokenizerFromTransfer, tokenizerTransfer } from '../../backend/model/tokenizer/transfer.js';
import { WorkerRolloutModel } from '../../backend/explorer/workers/pool.js';
import { makeHfModel } from '../../tools/hf-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-workers-hf-'));
const dir = makeHfModel(join(root, 'qwen2'), {
  architecture: 'Qwen2ForCausalLM',
  tokenizer: 'qwen3',
  hidden: 16,
  layers: 1,
  heads: 2,
  kvHeads: 1,
  intermediate: 24,
  tied: true,
});
const ck = loadCheckpoint(dir);
const tok = ck.tokenizer!;
const p = new WorkerRolloutModel({ workers: 1, config: ck.model.config, tokenizer: tok, repeat: null });
after(async () => {
  await p.close();
  ck.model.dispose();
  rmSync(root, { recursive: true, force: true });
});

test('the tokenizer a worker rebuilds is the same tokenizer (structured clone of the transfer)', () => {
  const back = tokenizerFromTransfer(structuredClone(tokenizerTransfer(tok)));
  const msgs = taskMessages('héllo wörld 🙂, what is 6 * 7?', 'Be brief.');
  assert.equal(back.kind, 'hf');
  assert.deepEqual(encodePrompt(back, msgs), encodePrompt(tok, msgs));
  assert.deepEqual(stopTokens(back), stopTokens(tok));
  const ids = tok.encode('héllo wörld 🙂');
  assert.equal(back.decode(ids), tok.decode(ids));
});

test('a worker thread generates what the in-process model generates with the Qwen tokenizer', async () => {
  await p.setWeights(ck.model, 1);
  const prompts = [encodePrompt(tok, taskMessages('What is 6 * 7?'))];
  const opts = { maxNewTokens: 6, temperature: 0, stopTokens: stopTokens(tok) };
  const got = await p.generate(prompts, opts);
  const want = await generate(ck.model, tok, prompts, opts);
  assert.deepEqual(
    got.map((g) => g.tokens),
    want.map((g) => g.tokens),
  );
  assert.deepEqual(
    got.map((g) => g.text),
    want.map((g) => g.text),
  );
});
