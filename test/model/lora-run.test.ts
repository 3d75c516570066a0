// A run on an imported Hugging Face model with model.lora: SFT then MIX (MIX's KL reference is the
// base without adapters) end to end through runJob; the final checkpoint keeps the base weights
// untouched, carries trained adapters, and its GGUF export (adapters merged) scores in llama.cpp as
// it does here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getLlama, LlamaLogLevel, type ControlledEvaluateInputItem, type Token } from 'node-llama-cpp';
import { validateRunConfig } from '../../backend/core/config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { tf, initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { scoreIds, scoreIdsOf } from '../../backend/model/score.js';
import { exportGguf } from '../../backend/model/export/gguf.js';
import { makeHfModel, makeHubEntry, TINY_QWEN2 } from '../../tools/hf-model.js';
import { parseFor } from '../../backend/cli/command.js';
import { commands } from '../../backend/cli/commands/index.js';

/** `rft model export CHECKPOINT --format peft --out DIR` in this process; adapter_config.json's base. */
async function peftBase(checkpoint: string, out: string): Promise<string> {
  const c = commands.get('model export');
  const log = console.log;
  console.log = () => {};
  try {
    assert.equal(await c.run(parseFor(c, [checkpoint, '--format', 'peft', '--out', out])), 0);
  } finally {
    console.log = log;
  }
  return (JSON.parse(readFileSync(join(out, 'adapter_config.json'), 'utf8')) as { base_model_name_or_path: string })
    .base_model_name_or_path;
}

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-lora-run-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

test('model.checkpoint = an HF-cache entry of a Qwen2 model with model.lora: SFT then MIX trains adapters only; the export scores the same in llama.cpp', async () => {
  // As the HF cache holds it: models--org--name/{refs/main, snapshots/<rev>/}.
  const { entry, snapshot: hf } = makeHubEntry(join(root, 'hub'), 'test/tiny-qwen2', '0123abcd', TINY_QWEN2);
  const { config, issues } = validateRunConfig(loraRunConfig(entry, 'memory'));
  assert.ok(config, JSON.stringify(issues));
  const ws = join(root, 'ws');
  const s = await runJob({ config, workspace: ws, runId: 'lora' });
  assert.equal(s.trainer_steps, 3);
  // The PEFT export names the model the run started from (the cache entry's hub name), not the run's checkpoint folder.
  assert.equal(await peftBase(s.checkpoint as string, join(root, 'peft-cache')), 'test/tiny-qwen2');
  // The report names the model trained (the checkpoint's own architecture and LoRA rank), not the preset defaults.
  assert.match(
    readFileSync(s.report, 'utf8'),
    /<th>model<\/th><td>Qwen2ForCausalLM · [\d.]+[kM] parameters · LoRA rank 4 · from test\/tiny-qwen2<\/td>/,
  );
  await checkFinal(s.checkpoint as string, hf);
});

test('the same with explorer and trainer processes (synchronizer checkpoint): the trainer keeps adapters, the explorer samples merged weights', async () => {
  const hf = makeHfModel(join(root, 'qwen2-proc'), { ...TINY_QWEN2, seed: 5 });
  const { config, issues } = validateRunConfig(loraRunConfig(hf, 'checkpoint'));
  assert.ok(config, JSON.stringify(issues));
  const s = await runJob({ config, workspace: join(root, 'ws-proc'), runId: 'lora-proc' });
  assert.equal(s.trainer_steps, 3);
  // Saved by the trainer process: the PEFT export (and the checkpoint's own adapter_config.json) name the plain folder the run started from.
  assert.equal(await peftBase(s.checkpoint as string, join(root, 'peft-proc')), hf);
  assert.equal(
    JSON.parse(readFileSync(join(s.checkpoint as string, 'adapter_config.json'), 'utf8')).base_model_name_or_path,
    hf,
  );
  const final = loadCheckpoint(s.checkpoint as string);
  const orig = loadCheckpoint(hf);
  assert.equal(final.model.lora?.rank, 4);
  for (const [n, v] of orig.model.params) assert.deepEqual(await final.model.params.get(n)!.data(), await v.data(), n);
  final.model.dispose();
  orig.model.dispose();
});

function loraRunConfig(checkpoint: string, sync: 'memory' | 'checkpoint'): Record<string, unknown> {
  return {
    name: 'lora',
    seed: 1,
    model: { checkpoint, lora: { rank: 4, alpha: 8, target_modules: ['q_proj', 'v_proj', 'up_proj', 'down_proj'] } },
    taskset: { builtin: 'reverse', size: 20 },
    eval: { builtin: 'reverse', size: 4, split: 'eval' },
    experts: { builtin: 'reverse', size: 8, seed: 99 },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: {
      tasks_per_step: 2,
      repeat_times: 2,
      sampling: { max_new_tokens: 4 },
      eval_sampling: { max_new_tokens: 4 },
    },
    buffer: { storage: 'sqlite', max_staleness: 1 },
    placement: sync,
    stages: [
      { name: 'warmup', algorithm: { name: 'sft' }, steps: 1, batch_size: 4, lr: 0.01 },
      { name: 'mix', algorithm: { name: 'mix', params: { expert_ratio: 0.5 } }, steps: 2, lr: 0.01 },
    ],
  };
}

async function checkFinal(checkpoint: string, hf: string): Promise<void> {
  const final = loadCheckpoint(checkpoint);
  const orig = loadCheckpoint(hf);
  // The run spoke the model's own tokenizer (not one trained on the taskset).
  assert.equal(final.tokenizer?.kind, 'hf');
  assert.deepEqual(final.model.lora, {
    rank: 4,
    alpha: 8,
    dropout: 0,
    target_modules: ['q_proj', 'v_proj', 'up_proj', 'down_proj'],
  });
  // The frozen base is the imported model, bit for bit.
  for (const [n, v] of orig.model.params) assert.deepEqual(await final.model.params.get(n)!.data(), await v.data(), n);
  // The adapters trained (B started at zero).
  const bNorm = tf.tidy(
    () =>
      tf
        .addN([...final.model.adapters].filter(([n]) => n.includes('lora_B')).map(([, v]) => tf.sum(tf.abs(v))))
        .dataSync()[0]!,
  );
  assert.ok(bNorm > 0, 'lora_B moved');

  const text = 'Reverse: abc -> cba. The quick brown fox.';
  const ids = scoreIdsOf(final.tokenizer!, text);
  const ours = await scoreIds(final.model, ids);
  const baseLp = await scoreIds(orig.model, ids);
  assert.ok(
    Math.max(...ours.map((x, i) => Math.abs(x - baseLp[i]!))) > 1e-4,
    'the trained model differs from the base',
  );
  const gguf = join(root, 'final.gguf');
  await exportGguf(final.model, final.tokenizer!, gguf, { dtype: 'f32' });
  final.model.dispose();
  orig.model.dispose();

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
    let d = 0;
    for (let i = 0; i < ids.length - 1; i++) {
      const logits = res[i]!.next.logits!;
      let max = -Infinity;
      for (const v of logits.values()) if (v > max) max = v;
      let sum = 0;
      for (const v of logits.values()) sum += Math.exp(v - max);
      d = Math.max(d, Math.abs(logits.get(toks[i + 1]!)! - max - Math.log(sum) - ours[i]!));
    }
    console.log(
      `# LoRA run's final checkpoint: max |ours - llama.cpp| = ${d.toExponential(2)} over ${ids.length - 1} log-probs`,
    );
    assert.ok(d < 1e-3, `difference ${d}`);
  } finally {
    await ctx.dispose();
    await model.dispose();
    await llama.dispose();
  }
}
