// DPO end to end on stored pairs: curation through the feedback service (promote, reject, rate) ->
// preference pairs in the buffer -> the pair sampler -> DPO steps; the chosen-vs-rejected log-prob
// margin (relative to the frozen reference) grows. Also: a pair is skipped whole, never split.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { FeedbackService } from '../../backend/buffer/feedback.js';
import { syncPairs } from '../../backend/buffer/pairs.js';
import { makeSampler } from '../../backend/buffer/sampler/registry.js';
import type { Experience } from '../../backend/core/types.js';
import { makeBuffer, TOKENIZER } from '../../tools/make-buffer.js';
import { spawnServe } from '../../tools/spawn-serve.js';

await initEngine();
const tok = CharTokenizer.train(['say the word ', 'abcdefghijklmnopqrstuvwxyz']);
let k = 0;
function rollout(task: string, prompt: string, answer: string): Experience {
  const p = encodePrompt(tok, taskMessages(prompt));
  const r = encodeResponse(tok, answer);
  return {
    id: `x${k++}`,
    taskId: task,
    groupId: `g-${task}`,
    runId: 'run',
    source: 'usual',
    promptTokens: p,
    promptText: prompt,
    responseTokens: r,
    responseText: answer,
    actionMask: r.map(() => 1),
    logprobs: r.map(() => -1),
    modelVersion: 0,
    reward: 0,
    status: 'ok',
    useCount: 0,
    createdAt: 1000 + k,
  };
}

/** Mean over rows (c, r) of [(log p(c) - log ref(c)) - (log p(r) - log ref(r))], summed over response tokens. */
async function margin(trainer: Trainer, ref: Transformer, rows: Experience[]): Promise<number> {
  const lp = await trainer.responseLogprobs(rows);
  const lr = await trainer.responseLogprobs(rows, ref);
  const ratio = rows.map((_, i) => lp[i]!.reduce((a, x) => a + x, 0) - lr[i]!.reduce((a, x) => a + x, 0));
  let m = 0;
  for (let i = 0; i < rows.length; i += 2) m += ratio[i]! - ratio[i + 1]!;
  return m / (rows.length / 2);
}

test('curation -> pairs -> DPO: the chosen log-prob margin grows; every pair shares its prompt', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-dpo-'));
  const store = await openStore(join(dir, 'buffer.db'));
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: 32,
    nLayers: 1,
    nHeads: 2,
    nKvHeads: 2,
    dFF: 64,
    maxSeqLen: 48,
  });
  const model = new Transformer(cfg, 5);
  const ref = model.clone();
  const trainer = new Trainer(
    model,
    makeObjective('dpo', { beta: 0.5 }),
    { lr: 5e-3, padId: tok.padId, microBatchSize: 2 },
    ref,
  );
  try {
    // Per task: a good, a bad and a middling response; plus a task whose rejection has no promoted partner.
    const words = ['cat', 'dog', 'sun', 'map'];
    const rows = words.map((w) => [
      rollout(w, `say the word ${w}`, w),
      rollout(w, `say the word ${w}`, 'zzzq'),
      rollout(w, `say the word ${w}`, `${w}s`),
    ]);
    const lone = rollout('lone', 'say the word lone', 'qqq');
    await store.appendExperiences([...rows.flat(), lone]);
    const fb = new FeedbackService(store);
    for (const [good, bad, mid] of rows) {
      await fb.promote(good!.id, 'ann');
      await fb.reject(bad!.id, 'ann');
      await fb.rate(good!.id, 5, 'bob');
      await fb.rate(mid!.id, 2, 'bob');
    }
    await fb.reject(lone.id, 'ann');
    // per task: curation (expert copy of good > bad), rating (good > mid)
    assert.deepEqual(await syncPairs(store, 'run'), { curation: 4, rating: 4, long2short: 0 });

    const sampler = makeSampler(store, { type: 'pairs', runId: 'run' });
    const all = await sampler.sample({ batchSize: 16, currentVersion: 0, timeoutMs: 0 });
    assert.equal(all.experiences.length, 16);
    for (let i = 0; i < 16; i += 2) {
      const [c, r] = [all.experiences[i]!, all.experiences[i + 1]!];
      assert.deepEqual(c.promptTokens, r.promptTokens, `pair ${i / 2} shares the prompt`);
      assert.notEqual(c.id, r.id);
      assert.ok(c.responseText !== 'zzzq' && r.responseText !== c.responseText);
    }
    const probe = all.experiences;
    const m0 = await margin(trainer, ref, probe);
    assert.ok(Math.abs(m0) < 1e-4, `the policy starts as the reference: margin ${m0}`);
    const metrics = [];
    for (let s = 0; s < 12; s++) {
      const b = await sampler.sample({ batchSize: 8, currentVersion: s, timeoutMs: 0 });
      metrics.push(await trainer.trainStep(b.experiences, s));
    }
    const m1 = await margin(trainer, ref, probe);
    console.log(
      `dpo margin: ${m0.toFixed(4)} -> ${m1.toFixed(4)} (loss ${metrics[0]!.loss.toFixed(4)} -> ${metrics.at(-1)!.loss.toFixed(4)})`,
    );
    assert.ok(m1 > 1, `margin grew from ${m0} to ${m1}`);
    assert.ok(metrics.at(-1)!.loss < metrics[0]!.loss, 'DPO loss fell');
    assert.ok(
      (await store.listPairs({ runId: 'run' })).every((p) => p.useCount === 7),
      'every pair used evenly (least-used first): 1 + 12 steps x 4 pairs / 8 pairs = 7',
    );
  } finally {
    trainer.dispose();
    model.dispose();
    ref.dispose();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a pair with a row the model cannot take is skipped whole; an odd number of paired rows is refused', async () => {
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: 16,
    nLayers: 1,
    nHeads: 2,
    nKvHeads: 2,
    dFF: 32,
    maxSeqLen: 40,
  });
  const model = new Transformer(cfg, 3);
  const ref = model.clone();
  const trainer = new Trainer(model, makeObjective('dpo'), { lr: 1e-3, padId: tok.padId, microBatchSize: 3 }, ref);
  try {
    const long = rollout('t', 'say the word t', 'x'.repeat(60));
    const batch = [
      rollout('t', 'say the word t', 'ok'),
      long,
      rollout('u', 'say the word u', 'yes'),
      rollout('u', 'say the word u', 'no'),
    ];
    const m = await trainer.trainStep(batch, 0);
    assert.equal(m.skipped_experiences, 2, 'the too-long row and its partner');
    assert.ok(Number.isFinite(m.loss) && m.loss > 0);
    await assert.rejects(trainer.trainStep(batch.slice(0, 3), 1), /even number of rows, got 3/);
  } finally {
    trainer.dispose();
    model.dispose();
    ref.dispose();
  }
});

test('curation in the server (promote, reject, rate over JSON-RPC) -> stored pairs -> DPO margin grows', async () => {
  const bufferPath = await makeBuffer(20);
  const served = spawnServe(['--workspace', tmpdir()]);
  try {
    await served.request('buffer/open', { path: bufferPath });
    // run-a: task t0 = e00000, e00010; t2 = e00002, e00012; t4 = e00004, e00014 (same prompt per task)
    await served.request('feedback/promote', { id: 'e00000' });
    await served.request('feedback/reject', { id: 'e00010' });
    await served.request('feedback/promote', { id: 'e00002' });
    await served.request('feedback/reject', { id: 'e00012' });
    await served.request('feedback/rate', { id: 'e00004', rating: 5 });
    await served.request('feedback/rate', { id: 'e00014', rating: 1 });
    await served.request('feedback/reject', { id: 'e00001' }); // run-b: not this run's pair
  } finally {
    await served.close();
  }
  const store = await openStore(bufferPath);
  const cfg = makeConfig({
    vocabSize: TOKENIZER.vocabSize,
    dModel: 32,
    nLayers: 1,
    nHeads: 2,
    nKvHeads: 2,
    dFF: 64,
    maxSeqLen: 32,
  });
  const model = new Transformer(cfg, 9);
  const ref = model.clone();
  const trainer = new Trainer(
    model,
    makeObjective('dpo', { beta: 0.5 }),
    { lr: 5e-3, padId: TOKENIZER.padId, microBatchSize: 2 },
    ref,
  );
  try {
    assert.deepEqual(await syncPairs(store, 'run-a'), { curation: 2, rating: 1, long2short: 0 });
    const pairs = await store.listPairs({ runId: 'run-a' });
    assert.deepEqual(pairs.map((p) => [p.origin, p.taskId, p.rejectedId]).sort(), [
      ['curation', 't0', 'e00010'],
      ['curation', 't2', 'e00012'],
      ['rating', 't4', 'e00014'],
    ]);
    const sampler = makeSampler(store, { type: 'pairs', runId: 'run-a' });
    const probe = (await sampler.sample({ batchSize: 6, currentVersion: 0, timeoutMs: 0 })).experiences;
    const m0 = await margin(trainer, ref, probe);
    for (let step = 0; step < 10; step++)
      await trainer.trainStep(
        (await sampler.sample({ batchSize: 6, currentVersion: step, timeoutMs: 0 })).experiences,
        step,
      );
    const m1 = await margin(trainer, ref, probe);
    console.log(`server curation -> dpo margin: ${m0.toFixed(4)} -> ${m1.toFixed(4)}`);
    assert.ok(Math.abs(m0) < 1e-4 && m1 > 1, `margin ${m0} -> ${m1}`);
  } finally {
    trainer.dispose();
    model.dispose();
    ref.dispose();
    await store.close();
  }
});
