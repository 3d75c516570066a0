// `explorer.engine: auto` (auto-engine.ts): per batch, native decode or llama.cpp, whichever this
// process measured faster at that batch size. Checked here with real engines (node-llama-cpp on a
// GGUF export, this project's decode): both branches are taken, each generation says which engine
// and why, log-probs of either engine agree with this project's forward pass within 1e-3, a model
// llama.cpp cannot take (no GGUF vocabulary) falls back to native with the reason, and a run records
// the engine and reason in every experience's metadata (memory and checkpoint placements; in memory the
// evaluations go through it too).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig } from '../../backend/core/config.js';

/** Every field refused as unread: beside a section's fields or across sections (config-reads.ts), both by the schema. */
const refused = (raw: Record<string, unknown>) => validateRunConfig(raw).issues;
import { runJob } from '../../backend/coordinator/run.js';
import { initEngine, type tf } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { presetConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { recomputeLogprobs } from '../../backend/explorer/llama-cpp-model.js';
import { AutoRolloutModel, batchBucket } from '../../backend/explorer/auto-engine.js';
import { makeRolloutEngine } from '../../backend/explorer/rollout-engine.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { makeHfModel, type HfModelSpec } from '../../tools/hf-model.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-llamacpp-auto-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const TOLERANCE = 1e-3;
const LLAMA: HfModelSpec = {
  architecture: 'LlamaForCausalLM',
  tokenizer: 'qwen3',
  hidden: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediate: 48,
  tied: true,
};
const maxDiff = (a: number[], b: number[]) => Math.max(0, ...a.map((x, i) => Math.abs(x - b[i]!)));

test('auto: the first lone prompt goes to llama.cpp (prior), the next to native (probe), then the faster measured one; batches of 4 start on native; every generation says which and why', async () => {
  const ck = loadCheckpoint(makeHfModel(join(root, 'unit'), { ...LLAMA, seed: 5 }));
  const tok = ck.tokenizer!;
  const auto = new AutoRolloutModel({ tokenizer: tok, config: ck.model.config });
  try {
    await auto.setWeights(ck.model, 4);
    const prompt = tok.encode('Hello there, how');
    const opts = { maxNewTokens: 10, temperature: 1, seed: 3, stopTokens: [] };
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [g] = await auto.generate([prompt], { ...opts, seed: i });
      assert.ok(g!.rolloutEngine, 'engine recorded');
      seen.push(g!.rolloutEngine!.name);
      assert.equal(g!.logprobsSource, 'engine');
      assert.equal(g!.tokens.length, 10);
      const d = maxDiff(g!.logprobs, await recomputeLogprobs(ck.model, prompt, g!.tokens, 1));
      console.log(
        `# batch ${i}: ${g!.rolloutEngine!.name} (${g!.rolloutEngine!.reason}), max |log-prob - ours| = ${d.toExponential(2)}`,
      );
      assert.ok(d < TOLERANCE, `${g!.rolloutEngine!.name}: difference ${d}`);
      if (i === 0) assert.match(g!.rolloutEngine!.reason, /no measurement at batch size 1 yet, prior llama-cpp/);
      if (i === 1) assert.match(g!.rolloutEngine!.reason, /probing native \(only llama-cpp measured at batch size 1\)/);
      if (i === 2)
        assert.match(
          g!.rolloutEngine!.reason,
          /measured faster \(native [\d.]+ vs llama-cpp [\d.]+ tok\/s at batch size 1; llama-cpp samples [\d.]+ tok\/s and its sync takes [\d.]+ s a version of ~\d+ tokens\)/,
        );
    }
    assert.deepEqual(seen.slice(0, 2), ['llama-cpp', 'native']);
    const m = auto.metrics();
    assert.equal(m.batches.native + m.batches['llama-cpp'], 3);
    assert.ok(m.tps['1']!.native! > 0 && m.tps['1']!['llama-cpp']! > 0, JSON.stringify(m.tps));
    assert.equal(m.llama_cpp?.syncs, 1, 'llama.cpp synced once, lazily');
    const four = await auto.generate(
      [prompt, tok.encode('1 + 2 ='), tok.encode('abc'), tok.encode('Reverse: xyz')],
      opts,
    );
    assert.ok(four.every((g) => g.rolloutEngine?.name === 'native' && /prior native/.test(g.rolloutEngine.reason)));
    assert.equal(batchBucket(4), '3-4');
    // A vision prefix always samples natively.
    assert.equal(auto.choose(1, { prefix: {} as tf.Tensor3D }).engine, 'native');
    // A new version: llama.cpp re-syncs only when it is picked again.
    await auto.setWeights(ck.model, 5);
    assert.equal(auto.metrics().llama_cpp?.syncs, 1);
  } finally {
    await auto.close();
    ck.model.dispose();
  }
});

test('auto: a model llama.cpp cannot take (no GGUF vocabulary) samples with native, the reason in each generation and the metrics', async () => {
  const tok = new ByteTestTokenizer();
  const cfg = presetConfig('tiny-0.4m', tok.vocabSize, {
    dModel: 32,
    nLayers: 1,
    nHeads: 4,
    nKvHeads: 2,
    dFF: 64,
    maxSeqLen: 48,
  });
  const model = new Transformer(cfg, 2);
  const auto = new AutoRolloutModel({ tokenizer: tok, config: cfg });
  try {
    await auto.setWeights(model, 0);
    const [g] = await auto.generate([[tok.bosId, ...tok.encode('hi')]], {
      maxNewTokens: 5,
      temperature: 1,
      seed: 1,
      stopTokens: [],
    });
    assert.equal(g!.rolloutEngine?.name, 'native');
    assert.match(g!.rolloutEngine!.reason, /^llama-cpp unavailable: /);
    assert.equal(g!.tokens.length, 5);
    assert.match(auto.metrics().llama_cpp_unavailable ?? '', /./);
    const [h] = await auto.generate([[tok.bosId]], { maxNewTokens: 3, temperature: 1, seed: 2, stopTokens: [] });
    assert.match(h!.rolloutEngine!.reason, /^llama-cpp unavailable: /);
  } finally {
    await auto.close();
    model.dispose();
  }
});

test('config: explorer.engine auto is accepted and reads explorer.workers; a vision model makes it native', () => {
  const base = {
    taskset: { builtin: 'reverse', size: 4 },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    stages: [{ name: 'g', algorithm: { name: 'grpo' }, steps: 1 }],
  };
  assert.equal(validateRunConfig({ ...base, explorer: { engine: 'auto' } }).config?.explorer.engine, 'auto');
  assert.deepEqual(refused({ ...base, explorer: { engine: 'auto', workers: 2 } }), []);
  assert.deepEqual(
    refused({ ...base, mode: 'explore', explorer: { engine: 'auto' } }).map((i) => i.path),
    ['explorer.engine'],
  );
  const tok = new ByteTestTokenizer();
  const vision = presetConfig('tiny-0.4m', tok.vocabSize, { vision: { patchSize: 4, channels: 3, maxPatches: 4 } });
  assert.equal(makeRolloutEngine({ engine: 'auto', workers: 1, config: vision, tokenizer: tok }), undefined);
});

for (const sync of ['memory', 'checkpoint'] as const) {
  test(`a run with explorer.engine auto (synchronizer ${sync}): the first batch of a size samples with the prior, the next probes the other engine; each experience records which and why, log-probs within 1e-3 of its version`, async () => {
    const hf = makeHfModel(join(root, `run-${sync}`), { ...LLAMA, seed: 9 });
    const { config, issues } = validateRunConfig({
      name: 'auto',
      seed: 3,
      model: { checkpoint: hf },
      taskset: { builtin: 'reverse', size: 20 },
      eval: { builtin: 'reverse', size: 2, split: 'eval' },
      workflow: { name: 'single_turn', reward: 'exact_match' },
      explorer: {
        engine: 'auto',
        tasks_per_step: 4,
        repeat_times: 1,
        sampling: { max_new_tokens: 6, temperature: 1 },
        eval_sampling: { max_new_tokens: 4 },
      },
      trainer: { batch_size: 4 },
      buffer: { storage: 'sqlite', max_staleness: 1 },
      placement: sync,
      stages: [{ name: 'grpo', algorithm: { name: 'grpo' }, steps: 2, lr: 0.05 }],
    });
    assert.ok(config, JSON.stringify(issues));
    const s = await runJob({ config, workspace: join(root, `ws-${sync}`), runId: `auto-${sync}`, checkpointEvery: 1 });
    assert.equal(s.trainer_steps, 2);
    const store = await openStore(join(s.run_dir, 'buffer.db'));
    const exps = (await store.list({ runId: `auto-${sync}` })).filter(
      (e) => e.source === 'usual' && e.split !== 'eval',
    );
    await store.close();
    assert.ok(exps.length >= 8, `${exps.length} rollouts`);
    const engines = new Set(exps.map((e) => e.metadata?.rollout_engine));
    assert.deepEqual([...engines].sort(), ['llama-cpp', 'native'], 'both engines sampled');
    for (const e of exps)
      assert.match(
        String(e.metadata?.rollout_engine_reason),
        /^batch \d+: (no measurement|probing|.* measured faster|re-probing)/,
      );
    let worst = 0;
    for (const v of new Set(exps.map((e) => e.modelVersion))) {
      // v0 is the imported folder (memory runs save no checkpoint before the first update).
      const ck = loadCheckpoint(v === 0 && sync === 'memory' ? hf : join(s.run_dir, 'checkpoints', `v${v}`));
      for (const e of exps.filter((x) => x.modelVersion === v))
        worst = Math.max(
          worst,
          maxDiff(e.logprobs, await recomputeLogprobs(ck.model, e.promptTokens, e.responseTokens, 1)),
        );
      ck.model.dispose();
    }
    // memory: the start evaluation (2 eval tasks, one batch) went through auto too: the first explore
    // step's metrics count one batch more than that step generated (checkpoint: the explorer process
    // counts only its own; the trainer process evaluates natively).
    const firstExplore = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind?: string; rollout?: { batches?: Record<string, number> } })
      .find((r) => r.kind === 'explore' && r.rollout);
    const counted = Object.values(firstExplore?.rollout?.batches ?? {}).reduce((a, b) => a + b, 0);
    assert.equal(
      counted,
      sync === 'memory' ? 2 : 1,
      `batches after the start evaluation and one explore step: ${JSON.stringify(firstExplore?.rollout)}`,
    );
    console.log(
      `# auto run (${sync}): ${exps.length} rollouts, engines ${[...engines].join(', ')}, max |stored - native of that version| = ${worst.toExponential(2)}`,
    );
    assert.ok(worst < TOLERANCE, `difference ${worst}`);
  });
}
