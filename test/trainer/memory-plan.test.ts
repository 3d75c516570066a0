// Micro-batch sizing against the wasm heap (backend/trainer/memory-plan.ts): the trainer picks the
// largest micro-batch whose activations fit what is left of the heap, logs it, lets the config's
// trainer.micro_batch_size win, and refuses a batch that cannot fit one row at a time with the
// numbers and the config fields instead of aborting the heap.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { tf, initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import {
  activationBytesPerRow,
  describePlan,
  HEAP_SHARE,
  planMicroBatch,
  TRAINABLE_COPIES,
} from '../../backend/trainer/memory-plan.js';
import { checkStageFits } from '../../backend/coordinator/run-loop.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { setLogSink } from '../../backend/core/log.js';
import { Rng } from '../../backend/core/rng.js';
import type { Experience } from '../../backend/core/types.js';

await initEngine();
const qwen = makeConfig({
  vocabSize: 151669,
  dModel: 896,
  nLayers: 24,
  nHeads: 14,
  nKvHeads: 2,
  dFF: 4864,
  maxSeqLen: 4096,
  attnBias: true,
});

function withEnv<T>(name: string, value: string | undefined, f: () => T): T {
  const prev = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
  try {
    return f();
  } finally {
    if (prev === undefined) delete process.env[name];
    else process.env[name] = prev;
  }
}

test("a row's activation estimate: the chunked head does not grow with the vocabulary, the unchunked head does", () => {
  const small = makeConfig({ ...qwen, vocabSize: 512 });
  const chunked = activationBytesPerRow(qwen, 80, true);
  assert.equal(chunked, activationBytesPerRow(small, 80, true));
  const unchunked = activationBytesPerRow(qwen, 80, false);
  // 5 V floats a token, doubled: 80 x 151,669 x 40 bytes = 485 MB more than the chunked row.
  assert.equal(unchunked - chunked, 2 * 4 * 80 * (5 * 151669 - 2 * 896));
  assert.ok(
    activationBytesPerRow(qwen, 160, true) > 2 * chunked,
    'attention probabilities grow with the square of the length',
  );
});

test('planMicroBatch: the largest micro-batch in the heap left, capped at the batch; one row too many is refused with the numbers and the fields', () => {
  const perRow = activationBytesPerRow(qwen, 80);
  const limit = 4 * 2 ** 30;
  const used = 2.5 * 2 ** 30;
  const p = planMicroBatch(qwen, { batch: 16, seqLen: 80, trainableBytes: 0, usedBytes: used, limitBytes: limit });
  const budget = HEAP_SHARE * (limit - used - 5 * 32 * 2 ** 20);
  assert.equal(p.micro, Math.min(16, Math.floor(budget / perRow)));
  assert.ok(p.micro >= 1 && p.micro < 16, `micro ${p.micro}`);
  assert.equal(p.refusal, undefined);
  assert.equal(
    planMicroBatch(qwen, { batch: 16, seqLen: 80, trainableBytes: 0, usedBytes: 0, limitBytes: Infinity }).micro,
    16,
    'no heap to size against: the whole batch',
  );

  const r = planMicroBatch(qwen, {
    batch: 16,
    seqLen: 4000,
    trainableBytes: 2 ** 30,
    usedBytes: used,
    limitBytes: limit,
  });
  assert.equal(r.micro, 1);
  assert.match(r.refusal!, /one row of 4000 tokens needs about [\d,]+ MiB/);
  assert.match(r.refusal!, /vocabulary 151,669, hidden size 896, 24 layers/);
  assert.match(r.refusal!, /trainer\.micro_batch_size 1 cannot fit/);
  assert.match(r.refusal!, /explorer\.sampling\.max_new_tokens/);
  assert.match(r.refusal!, /model\.lora/);
});

function experiences(n: number, len: number, vocab: number): Experience[] {
  const rng = new Rng(4);
  return Array.from({ length: n }, (_, b): Experience => {
    const resp = Array.from({ length: len - 4 }, () => rng.int(1, vocab));
    return {
      id: `e${b}`,
      taskId: `t${b}`,
      groupId: `g${b >> 1}`,
      runId: 'r',
      source: 'usual',
      promptTokens: [1, 2, 3, 4],
      promptText: '',
      responseTokens: resp,
      responseText: '',
      actionMask: resp.map(() => 1),
      logprobs: resp.map(() => -3),
      modelVersion: 0,
      reward: 0,
      advantages: resp.map(() => rng.normal()),
      status: 'ok',
      useCount: 0,
      createdAt: 0,
    };
  });
}

test("the trainer sizes its micro-batches from the heap, logs the choice, and the config's micro_batch_size wins", async () => {
  const cfg = makeConfig({ vocabSize: 2048, dModel: 32, nLayers: 2, nHeads: 4, nKvHeads: 2, dFF: 64, maxSeqLen: 64 });
  const model = new Transformer(cfg, 1);
  const exps = experiences(8, 40, 2048);
  const lines: string[] = [];
  setLogSink((level, scope, msg) => lines.push(`${level} ${scope}: ${msg}`));
  const level = process.env.RFT_LOG_LEVEL;
  process.env.RFT_LOG_LEVEL = 'info';
  try {
    // A heap limit that leaves room for 3 rows of this length: 8 rows go as 3 + 3 + 2.
    const trainer = new Trainer(model, makeObjective('grpo', { kl: null }), { lr: 1e-3, padId: 0 });
    const perRow = activationBytesPerRow(cfg, 40);
    const trainable = model.variables().reduce((a, v) => a + v.size * 4, 0);
    const fixed = tf.memory().numBytes + TRAINABLE_COPIES * trainable + 5 * 32 * 2 ** 20;
    const limitMiB = (fixed + (3.5 * perRow) / HEAP_SHARE) / 2 ** 20;
    const m = await withEnv('RFT_HEAP_LIMIT_MIB', String(limitMiB), () => trainer.trainStep(exps, 0));
    assert.equal(m.micro_batch, 3);
    assert.ok(Number.isFinite(m.loss) && m.grad_norm > 0);
    assert.ok(
      lines.some((l) =>
        /micro-batch 3 of 8 rows \(sequences of 40 tokens, vocabulary 2,048, hidden size 32, 2 layers/.test(l),
      ),
      lines.join('\n'),
    );
    // Unlimited (the heap has room): the whole batch, as before.
    assert.equal((await trainer.trainStep(exps, 1)).micro_batch, 8);

    const explicit = new Trainer(model, makeObjective('grpo', { kl: null }), { lr: 1e-3, padId: 0, microBatchSize: 5 });
    assert.equal(
      (await withEnv('RFT_HEAP_LIMIT_MIB', String(limitMiB), () => explicit.trainStep(exps, 0))).micro_batch,
      5,
      'trainer.micro_batch_size wins over the estimate',
    );
    const whole = new Trainer(model, makeObjective('grpo', { kl: null }), { lr: 1e-3, padId: 0, microBatchSize: 0 });
    assert.equal(
      (await withEnv('RFT_HEAP_LIMIT_MIB', String(limitMiB), () => whole.trainStep(exps, 0))).micro_batch,
      8,
      'micro_batch_size 0: the whole batch',
    );

    // Not even one row fits: a clear error at the step, never a heap abort.
    await assert.rejects(
      withEnv('RFT_HEAP_LIMIT_MIB', String((fixed + 0.5 * perRow) / 2 ** 20), () => trainer.trainStep(exps, 2)),
      /one row of 40 tokens needs about .* even trainer\.micro_batch_size 1 cannot fit/,
    );
    trainer.dispose();
    explicit.dispose();
    whole.dispose();
  } finally {
    setLogSink((lvl, scope, msg) => process.stderr.write(`${lvl} ${scope}: ${msg}\n`));
    if (level === undefined) delete process.env.RFT_LOG_LEVEL;
    else process.env.RFT_LOG_LEVEL = level;
    model.dispose();
  }
});

test('a stage whose rows cannot fit the heap one at a time is refused at its start, naming the fields', () => {
  const { config, issues } = validateRunConfig({
    taskset: { path: 'tasks.jsonl' },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: { sampling: { max_new_tokens: 64 } },
    trainer: { batch_size: 16 },
  });
  assert.deepEqual(issues, []);
  const cfg = makeConfig({ vocabSize: 4096, dModel: 32, nLayers: 2, nHeads: 4, nKvHeads: 2, dFF: 64, maxSeqLen: 128 });
  const model = new Transformer(cfg, 1);
  const trainer = new Trainer(model, makeObjective('grpo', { kl: null }), { lr: 1e-3, padId: 0 });
  try {
    assert.doesNotThrow(() => checkStageFits(config!, model, trainer, 16, true));
    const tight =
      (tf.memory().numBytes +
        TRAINABLE_COPIES * model.variables().reduce((a, v) => a + v.size * 4, 0) +
        5 * 32 * 2 ** 20 +
        0.5 * activationBytesPerRow(cfg, 65)) /
      2 ** 20;
    assert.throws(
      () => withEnv('RFT_HEAP_LIMIT_MIB', String(tight), () => checkStageFits(config!, model, trainer, 16, true)),
      /trainer\.batch_size 16: one row of 65 tokens needs about .*vocabulary 4,096.*trainer\.micro_batch_size 1 cannot fit.*explorer\.sampling\.max_new_tokens/,
    );
  } finally {
    trainer.dispose();
    model.dispose();
  }
});

test('on an engine without a wasm heap (webgpu, cpu) the log line says so instead of "∞ MiB"', () => {
  const p = planMicroBatch(qwen, { batch: 8, seqLen: 7, trainableBytes: 1e6, usedBytes: 0, limitBytes: Infinity });
  assert.equal(p.micro, 8);
  const line = describePlan(qwen, p);
  assert.doesNotMatch(line, /∞|Infinity/);
  assert.match(line, /micro-batch 8 of 8 rows .*no wasm heap bounds them on this engine/);
  const bounded = describePlan(
    qwen,
    planMicroBatch(qwen, { batch: 8, seqLen: 7, trainableBytes: 1e6, usedBytes: 0, limitBytes: 2 ** 32 }),
  );
  assert.match(bounded, /MiB of the 4,096 MiB heap free for them/);
});
