// Issue 14's Show as a test: configs/examples/hf-lora/config.yaml as it is (an HF model folder in
// model.checkpoint, model.lora, the user's own JSONL / CSV files mapped by `format`) runs SFT then
// MIX through `rft`'s config loader and runJob; its final checkpoint, exported with
// `rft model export --format gguf`, scores in llama.cpp as `rft model score` scores it here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type ControlledEvaluateInputItem, type Token } from 'node-llama-cpp';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { openStore } from '../../backend/buffer/storage/index.js';
import { makeExampleModel } from '../../configs/examples/hf-lora/make-model.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-hf-lora-example-'));
test.after(() => rmSync(root, { recursive: true, force: true }));
const EXAMPLE = join('configs', 'examples', 'hf-lora');
const TEXT = 'rot abcd -> bcda. The quick brown fox jumps over the lazy dog.';

test("configs/examples/hf-lora: an HF folder with model.lora on the user's own files runs SFT then MIX; the final GGUF export scores in llama.cpp as here (1e-3)", async () => {
  // The example folder as a user has it, with its model made by its script (relative model.checkpoint).
  const ex = join(root, 'hf-lora');
  mkdirSync(ex);
  for (const f of ['config.yaml', 'train.jsonl', 'experts.jsonl', 'eval.csv'])
    copyFileSync(join(EXAMPLE, f), join(ex, f));
  const hf = makeExampleModel(join(ex, 'model'));
  const cfg = loadRunConfig(join(ex, 'config.yaml'));
  assert.equal(cfg.model.checkpoint, hf);
  assert.equal(cfg.model.lora?.rank, 8);
  assert.deepEqual(
    cfg.stages?.map((s) => s.algorithm.name),
    ['sft', 'mix'],
  );

  const s = await runJob({ config: cfg, workspace: join(root, 'ws'), runId: 'hf-lora' });
  assert.equal(s.trainer_steps, 8);
  const records = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    records.filter((r) => r.kind === 'stage').map((r) => `${r.stage}:${r.algorithm}`),
    ['warmup:sft', 'mix:mix'],
  );
  // MIX explored: rollouts of the user's tasks (ids from the file's `qid`) are in the buffer beside the demonstrations.
  const store = await openStore(join(s.run_dir, 'buffer.db'));
  const exps = await store.list({ runId: 'hf-lora' });
  assert.equal(await store.countTasks('hf-lora'), 64);
  await store.close();
  const rollouts = exps.filter((e) => e.source === 'usual' && e.split !== 'eval');
  assert.ok(rollouts.length >= 16 && rollouts.every((e) => /^t\d+$/.test(e.taskId)), `${rollouts.length} rollouts`);
  assert.equal(exps.filter((e) => e.source === 'expert').length, 16);

  // The final checkpoint: adapters only trained, the base is the folder's, the tokenizer the model's own.
  const final = loadCheckpoint(s.checkpoint as string);
  const orig = loadCheckpoint(hf);
  assert.equal(final.tokenizer?.kind, 'hf');
  assert.equal(final.model.lora?.rank, 8);
  for (const [n, v] of orig.model.params) assert.deepEqual(await final.model.params.get(n)!.data(), await v.data(), n);
  final.model.dispose();
  orig.model.dispose();

  // The user's commands: score here, export to GGUF, score the GGUF in llama.cpp.
  const rft = (...args: string[]) =>
    execFileSync(process.execPath, ['bin/rft.mjs', ...args], {
      encoding: 'utf8',
      env: { ...process.env, RFT_FROM_SOURCE: '1' },
    });
  const ours = JSON.parse(
    rft('model', 'score', s.checkpoint as string, '--text', TEXT)
      .trim()
      .split('\n')
      .pop()!,
  ) as { ids: number[]; logprobs: number[] };
  const out = JSON.parse(
    rft('model', 'export', s.checkpoint as string, '--format', 'gguf', '--out', join(root, 'gguf'))
      .trim()
      .split('\n')
      .pop()!,
  ) as { out: string };
  const theirs = await llamaCppLogprobs(out.out, ours.ids);
  const d = Math.max(...ours.logprobs.map((x, i) => Math.abs(x - theirs[i]!)));
  const baseScore = JSON.parse(rft('model', 'score', hf, '--text', TEXT).trim().split('\n').pop()!) as {
    logprobs: number[];
  };
  const moved = Math.max(...ours.logprobs.map((x, i) => Math.abs(x - baseScore.logprobs[i]!)));
  console.log(
    `# hf-lora example: base accuracy ${s.base_accuracy}, final ${s.final_accuracy}; final checkpoint vs base: max |Δ log-prob| ${moved.toExponential(2)}; GGUF in llama.cpp: max |ours - llama.cpp| = ${d.toExponential(2)} over ${ours.logprobs.length} log-probs`,
  );
  assert.ok(moved > 1e-4, 'the trained checkpoint differs from the base');
  assert.ok(d < 1e-3, `difference ${d}`);
});

async function llamaCppLogprobs(gguf: string, ids: number[]): Promise<number[]> {
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error });
  const model = await llama.loadModel({ modelPath: gguf });
  const ctx = await model.createContext({
    contextSize: 128,
    batchSize: 128,
    flashAttention: false,
    experimentalKvCacheKeyType: 'F32',
    experimentalKvCacheValueType: 'F32',
  });
  try {
    const toks = ids as Token[];
    const input: ControlledEvaluateInputItem[] = toks.map((t, i) =>
      i < toks.length - 1 ? [t, { generateNext: { logits: true } }] : t,
    );
    const res = await ctx.getSequence().controlledEvaluate(input);
    return toks.slice(1).map((t, i) => {
      const logits = res[i]!.next.logits!;
      let max = -Infinity;
      for (const v of logits.values()) if (v > max) max = v;
      let sum = 0;
      for (const v of logits.values()) sum += Math.exp(v - max);
      return logits.get(t)! - max - Math.log(sum);
    });
  } finally {
    await ctx.dispose();
    await model.dispose();
    await llama.dispose();
  }
}
