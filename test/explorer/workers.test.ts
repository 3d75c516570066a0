import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { generate } from '../../backend/model/generate.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { stopTokens } from '../../backend/model/chat.js';
import { WorkerRolloutModel } from '../../backend/explorer/workers/pool.js';
import { workflowSampling } from '../../backend/explorer/workflow.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

await initEngine();
const tok = CharTokenizer.train(['abcdefghij rev 0123456789']);
const cfg = makeConfig({
  vocabSize: tok.vocabSize,
  dModel: 16,
  nLayers: 1,
  nHeads: 2,
  nKvHeads: 1,
  dFF: 32,
  maxSeqLen: 48,
});
const modelA = new Transformer(cfg, 1);
const modelB = new Transformer(cfg, 2);
const prompts = ['rev abc', 'rev ba', 'rev cab', 'rev a', 'rev bbb'].map((p) => [tok.bosId, ...tok.encode(p)]);
const greedy = { maxNewTokens: 8, temperature: 0, stopTokens: stopTokens(tok) };
const pools: WorkerRolloutModel[] = [];
after(async () => {
  await Promise.all(pools.map((p) => p.close()));
  modelA.dispose();
  modelB.dispose();
});
const pool = (o: Partial<ConstructorParameters<typeof WorkerRolloutModel>[0]> = {}) => {
  const p = new WorkerRolloutModel({ workers: 2, config: cfg, tokenizer: tok, repeat: null, ...o });
  pools.push(p);
  return p;
};

test('2 workers produce what the in-process model produces (greedy), and follow new weights by version', async () => {
  const p = pool();
  await p.setWeights(modelA, 4);
  const got = await p.generate(prompts, greedy);
  const want = await generate(modelA, tok, prompts, greedy);
  assert.equal(p.version, 4);
  assert.deepEqual(
    got.map((g) => g.tokens),
    want.map((g) => g.tokens),
  );
  got.forEach((g, i) =>
    assertF32Close(g.logprobs, want[i]!.logprobs, ULPS.twoPasses, `sample ${i}: worker vs in-process`),
  );
  await p.setWeights(modelB, 5);
  const got2 = await p.generate(prompts, greedy);
  const want2 = await generate(modelB, tok, prompts, greedy);
  assert.equal(p.version, 5);
  assert.deepEqual(
    got2.map((g) => g.tokens),
    want2.map((g) => g.tokens),
  );
  assert.notDeepEqual(
    want2.map((g) => g.tokens),
    want.map((g) => g.tokens),
    'the two weight sets differ',
  );
  const m = p.metrics();
  assert.equal(m.jobs, 4);
  assert.equal(m.samples, 10);
  assert.ok(m.generate_s > 0 && m.weight_sync_s > 0);
});

test('a hung job times out and is retried on a fresh worker; a crashed worker is replaced', async () => {
  const p = pool({ taskTimeoutMs: 4000, maxRetries: 2, faults: { hang: 1, crash: 1 } });
  await p.setWeights(modelA, 1);
  const got = await p.generate(prompts, greedy);
  const want = await generate(modelA, tok, prompts, greedy);
  assert.deepEqual(
    got.map((g) => g.tokens),
    want.map((g) => g.tokens),
  );
  const m = p.metrics();
  assert.equal(m.timeouts, 1);
  assert.ok(m.crashes >= 1);
  assert.equal(m.retries, 2);
  assert.equal(m.infra_failures, 0);
});

test('a job that keeps failing becomes infra_failure experiences after bounded retries', async () => {
  const p = pool({ workers: 1, taskTimeoutMs: 1500, maxRetries: 1, faults: { hang: 2 } });
  await p.setWeights(modelA, 9);
  const task = { id: 't', taskset: 'x', domain: 'text' as const, prompt: 'rev ab', answer: 'ba' };
  const exps = await workflows.get('single_turn').run([task], {
    model: p,
    reward: async () => ({ reward: 1, status: 'ok' }),
    runId: 'r',
    repeatTimes: 2,
    sampling: workflowSampling({ maxNewTokens: 4, temperature: 1, topK: 0, topP: 1 }, p.tokenizer),
    step: 0,
    seed: 0,
    split: 'train',
  });
  assert.equal(exps.length, 2);
  for (const e of exps) {
    assert.equal(e.status, 'infra_failure');
    assert.match(e.statusReason!, /timed out.*after 2 attempts/);
  }
  assert.equal(p.metrics().infra_failures, 2);
});
