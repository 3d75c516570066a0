// Rollouts at model scale (issue 14 item 6): `explorer.engine: llama-cpp` samples with llama.cpp
// (node-llama-cpp) from a GGUF export of each synced version. Checked here: the engine's behaviour
// log-probs equal this project's log-probs of the same tokens within 1e-3 (an independent forward
// pass), truncated sampling (top_p) marks them recomputed, and a whole run (SFT then GRPO, both
// process models) stores experiences whose version and log-probs are those of the weights that
// sampled them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig } from '../../backend/core/config.js';

/** Every field refused as unread: beside a section's fields or across sections (config-reads.ts), both by the schema. */
const refused = (raw: Record<string, unknown>) => validateRunConfig(raw).issues;
import { runJob } from '../../backend/coordinator/run.js';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { LlamaCppRolloutModel, recomputeLogprobs } from '../../backend/explorer/llama-cpp-model.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { makeHfModel, TINY_QWEN2 } from '../../tools/hf-model.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-llamacpp-rollout-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const TOLERANCE = 1e-3;
const QWEN2 = TINY_QWEN2;
const maxDiff = (a: number[], b: number[]) => Math.max(0, ...a.map((x, i) => Math.abs(x - b[i]!)));

test("LlamaCppRolloutModel: sampled tokens carry llama.cpp log-probs equal to this project's within 1e-3; top_p makes them recomputed; a sync replaces the GGUF", async () => {
  const dir = makeHfModel(join(root, 'unit'), { ...QWEN2, seed: 3 });
  const ck = loadCheckpoint(dir);
  const tok = ck.tokenizer!;
  const m = new LlamaCppRolloutModel({ tokenizer: tok, maxSeqLen: ck.model.config.maxSeqLen });
  try {
    await m.setWeights(ck.model, 7);
    assert.equal(m.version, 7);
    const first = m.ggufFile!;
    const prompts = [tok.encode('Reverse: abc'), tok.encode('Hello there, how'), tok.encode('1 + 2 =')];
    for (const temperature of [1, 0.7]) {
      const gens = await m.generate(prompts, { maxNewTokens: 12, temperature, seed: 5, stopTokens: [] });
      assert.equal(gens.length, 3);
      for (const [i, g] of gens.entries()) {
        assert.equal(g.tokens.length, 12);
        assert.equal(g.logprobsSource, 'engine');
        const ours = await recomputeLogprobs(ck.model, prompts[i]!, g.tokens, temperature);
        const d = maxDiff(g.logprobs, ours);
        console.log(
          `# temperature ${temperature}, prompt ${i}: max |llama.cpp - ours| = ${d.toExponential(2)} over ${g.tokens.length} sampled tokens (mean log-prob ${(ours.reduce((a, b) => a + b, 0) / ours.length).toFixed(2)})`,
        );
        assert.ok(d < TOLERANCE, `difference ${d}`);
      }
      // Different seeds per sequence: the samples are not copies of one another.
      assert.ok(new Set(gens.map((g) => g.tokens.join(','))).size > 1);
    }
    // Truncated sampling: llama.cpp's probability is renormalised over the kept tokens, so the
    // log-probs are this project's, recomputed (exactly the forward pass of the same weights).
    const cut = await m.generate(prompts.slice(0, 1), {
      maxNewTokens: 8,
      temperature: 1,
      topP: 0.5,
      seed: 1,
      stopTokens: [],
    });
    assert.equal(cut[0]!.logprobsSource, 'recomputed');
    assert.deepEqual(cut[0]!.logprobs, await recomputeLogprobs(ck.model, prompts[0]!, cut[0]!.tokens, 1));
    assert.equal(m.metrics().recomputed, 1);
    // A stop token ends a sample (kept in its tokens).
    const free = await m.generate(prompts.slice(0, 1), { maxNewTokens: 8, temperature: 0, stopTokens: [] });
    const stopAt = free[0]!.tokens[2]!;
    const stopped = await m.generate(prompts.slice(0, 1), { maxNewTokens: 8, temperature: 0, stopTokens: [stopAt] });
    assert.equal(stopped[0]!.finishReason, 'stop');
    assert.deepEqual(stopped[0]!.tokens, free[0]!.tokens.slice(0, free[0]!.tokens.indexOf(stopAt) + 1));
    // The next version replaces the GGUF file (the old one is removed).
    await m.setWeights(ck.model, 8);
    assert.equal(m.version, 8);
    assert.ok(!existsSync(first), 'old GGUF pruned');
    assert.ok(existsSync(m.ggufFile!));
    assert.equal(m.metrics().syncs, 2);
  } finally {
    await m.close();
    ck.model.dispose();
  }
});

test('config: explorer.engine takes native | llama-cpp; an unknown engine, workers beside llama-cpp and an engine in mode explore are refused by path', () => {
  const base = {
    taskset: { builtin: 'reverse', size: 4 },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: 1 }],
  };
  assert.equal(validateRunConfig({ ...base, explorer: { engine: 'llama-cpp' } }).config?.explorer.engine, 'llama-cpp');
  assert.equal(validateRunConfig(base).config?.explorer.engine, 'native');
  const bad = validateRunConfig({ ...base, explorer: { engine: 'vllm' } });
  assert.ok(!bad.config && bad.issues.some((i) => i.path === 'explorer.engine'), JSON.stringify(bad.issues));
  // Fields the run would not read (what `rft run` and --check report, at their lines).
  assert.deepEqual(refused({ ...base, explorer: { engine: 'llama-cpp' } }), []);
  assert.deepEqual(
    refused({ ...base, explorer: { engine: 'llama-cpp', workers: 2 } }).map((i) => i.path),
    ['explorer.workers'],
  );
  assert.deepEqual(
    refused({ ...base, mode: 'explore', explorer: { engine: 'llama-cpp' } }).map((i) => i.path),
    ['explorer.engine'],
  );
});

for (const sync of ['memory', 'checkpoint'] as const) {
  test(`a run with explorer.engine llama-cpp (synchronizer ${sync}): every experience carries the version that sampled it and log-probs within 1e-3 of that version's`, async () => {
    const hf = makeHfModel(join(root, `run-${sync}`), { ...QWEN2, seed: 11 });
    const { config, issues } = validateRunConfig({
      name: 'llama-cpp',
      seed: 2,
      model: { checkpoint: hf },
      taskset: { builtin: 'reverse', size: 20 },
      eval: { builtin: 'reverse', size: 4, split: 'eval' },
      experts: { builtin: 'reverse', size: 8, seed: 99 },
      workflow: { name: 'single_turn', reward: 'exact_match' },
      explorer: {
        engine: 'llama-cpp',
        tasks_per_step: 2,
        repeat_times: 2,
        sampling: { max_new_tokens: 6, temperature: 1 },
        eval_sampling: { max_new_tokens: 4 },
      },
      trainer: { batch_size: 4 },
      buffer: { storage: 'sqlite', max_staleness: 1 },
      placement: sync,
      stages: [
        { name: 'warmup', algorithm: { name: 'sft' }, steps: 1, batch_size: 4, lr: 0.01 },
        { name: 'grpo', algorithm: { name: 'grpo' }, steps: 2, lr: 0.05 },
      ],
    });
    assert.ok(config, JSON.stringify(issues));
    const s = await runJob({ config, workspace: join(root, `ws-${sync}`), runId: `lc-${sync}`, checkpointEvery: 1 });
    assert.equal(s.trainer_steps, 3);
    const store = await openStore(join(s.run_dir, 'buffer.db'));
    const exps = (await store.list({ runId: `lc-${sync}` })).filter((e) => e.source === 'usual' && e.split !== 'eval');
    await store.close();
    assert.ok(exps.length >= 8, `${exps.length} rollouts`);
    const versions = new Set(exps.map((e) => e.modelVersion));
    // Two GRPO steps after one SFT step: rollouts of v1 and v2 (the second sync's GGUF).
    assert.ok(versions.has(1) && versions.has(2), `versions ${[...versions]}`);
    const ckpts = readdirSync(join(s.run_dir, 'checkpoints'));
    let worst = 0;
    for (const v of versions) {
      assert.ok(ckpts.includes(`v${v}`), `checkpoint v${v} in ${ckpts}`);
      const ck = loadCheckpoint(join(s.run_dir, 'checkpoints', `v${v}`));
      for (const e of exps.filter((x) => x.modelVersion === v)) {
        assert.equal(e.metadata?.logprobs_source, 'engine');
        assert.equal(e.logprobs.length, e.responseTokens.length);
        const ours = await recomputeLogprobs(ck.model, e.promptTokens, e.responseTokens, 1);
        worst = Math.max(worst, maxDiff(e.logprobs, ours));
      }
      ck.model.dispose();
    }
    console.log(
      `# ${sync}: ${exps.length} rollouts of versions ${[...versions].sort().join(', ')}, max |stored - native of that version| = ${worst.toExponential(2)}`,
    );
    assert.ok(worst < TOLERANCE, `difference ${worst}`);
  });
}

test("distributed (PostgreSQL) explorer with explorer.engine llama-cpp: rollouts of the first version carry llama.cpp log-probs within 1e-3 of the HF folder's", async (t) => {
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  try {
    const url = pgSchemaUrl(pg.url);
    const hf = makeHfModel(join(root, 'dist'), { ...QWEN2, seed: 13 });
    const { config, issues } = validateRunConfig({
      name: 'llama-cpp-dist',
      seed: 4,
      model: { checkpoint: hf },
      taskset: { builtin: 'reverse', size: 20 },
      eval: { builtin: 'reverse', size: 4, split: 'eval' },
      workflow: { name: 'single_turn', reward: 'exact_match' },
      explorer: {
        engine: 'llama-cpp',
        tasks_per_step: 2,
        repeat_times: 2,
        sampling: { max_new_tokens: 6, temperature: 1 },
        eval_sampling: { max_new_tokens: 4 },
      },
      trainer: { batch_size: 4 },
      buffer: { max_staleness: 1 },
      placement: 'checkpoint',
      stages: [{ name: 'grpo', algorithm: { name: 'grpo' }, steps: 2, lr: 0.05 }],
    });
    assert.ok(config, JSON.stringify(issues));
    await createDistributedRun(config, url, 'lc-dist', join(root, 'dist-weights'));
    const stop = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'lc-dist', signal: stop.signal, leaseMs: 60_000 });
    try {
      const r = await distributedTrainer({ url, runId: 'lc-dist', outDir: join(root, 'dist-out') });
      assert.equal(r.done, true);
    } finally {
      stop.abort();
      await explorer;
    }
    const store = await openStore(url);
    const exps = await store.list({ runId: 'lc-dist', source: 'usual', limit: 1000 });
    await store.close();
    const v0 = exps.filter((e) => e.modelVersion === 0 && e.split !== 'eval');
    assert.ok(v0.length >= 2, `${v0.length} rollouts of v0`);
    assert.ok(exps.every((e) => e.metadata?.logprobs_source === 'engine'));
    const ck = loadCheckpoint(hf);
    let worst = 0;
    for (const e of v0)
      worst = Math.max(
        worst,
        maxDiff(e.logprobs, await recomputeLogprobs(ck.model, e.promptTokens, e.responseTokens, 1)),
      );
    ck.model.dispose();
    console.log(
      `# distributed: ${exps.length} rollouts, ${v0.length} of v0, max |stored - native v0| = ${worst.toExponential(2)}`,
    );
    assert.ok(worst < TOLERANCE, `difference ${worst}`);
  } finally {
    pg.stop();
  }
});
