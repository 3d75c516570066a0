// LoRA: adapters only train (the frozen base gets no gradient and no optimiser state), the KL
// reference is the base without adapters (sharing its weights), dropout only in training, and a
// LoRA checkpoint saves / loads / exports (merged hf, PEFT adapters) with the same log-probs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tf, initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint, saveCheckpoint } from '../../backend/model/checkpoint.js';
import { tokenLogprobs } from '../../backend/model/logprobs.js';
import { makeLoraConfig, loraModules, LORA_TARGETS } from '../../backend/model/lora.js';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../../backend/model/lora-files.js';
import { exportHf } from '../../backend/model/export/hf.js';
import { exportPeft } from '../../backend/model/export/peft.js';
import { readSafetensorsHeader } from '../../backend/model/safetensors.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import type { Transformer } from '../../backend/model/transformer.js';
import type { Tokenizer } from '../../backend/model/tokenizer/types.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import type { Experience } from '../../backend/core/types.js';
import { makeHfModel, TINY_QWEN2 } from '../../tools/hf-model.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-lora-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const QWEN2 = TINY_QWEN2;
const base = makeHfModel(join(root, 'qwen2'), QWEN2);

function expert(tok: Tokenizer, id: string, prompt: string, answer: string): Experience {
  const p = encodePrompt(tok, taskMessages(prompt));
  const r = encodeResponse(tok, answer);
  return {
    id,
    taskId: id,
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
  };
}

/** Log-probs of a fixed sequence (no dropout: a scoring pass). */
async function lp(model: Transformer, ids: number[], train = false): Promise<number[]> {
  const t = tf.tidy(() => tokenLogprobs(model, tf.tensor2d([ids], [1, ids.length], 'int32'), { train }).logprobs);
  const out = [...((await t.data()) as Float32Array)];
  t.dispose();
  return out;
}

async function values(v: tf.Tensor): Promise<Float32Array> {
  return (await v.data()) as Float32Array;
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i]!)));

test('model.lora config: defaults (all seven projections, alpha 2r, no dropout); unknown keys and targets refused', () => {
  const c = makeLoraConfig({ rank: 4 });
  assert.deepEqual(c, { rank: 4, alpha: 8, dropout: 0, target_modules: [...LORA_TARGETS] });
  assert.throws(() => makeLoraConfig({ rank: 4, target_modules: ['lm_head' as never] }), /target_modules/);
  assert.throws(() => makeLoraConfig({ rank: 4, bias: 'all' } as never), /bias/);
  assert.throws(() => makeLoraConfig({ rank: 0 }), /rank/);
});

test('adapters only train: base weights bit-identical after steps, no gradient or optimiser state for them; the reference is the base without adapters', async () => {
  const ck = loadCheckpoint(base);
  const model = ck.model;
  const tok = ck.tokenizer!;
  const exps = [expert(tok, 'a', 'What is 2 + 2?', 'It is 4.'), expert(tok, 'b', 'Name a colour.', 'Blue.')];
  const probe = [...exps[0]!.promptTokens, ...exps[0]!.responseTokens];
  const before = await lp(model, probe);
  const baseWeights = new Map<string, Float32Array>();
  for (const [n, v] of model.params) baseWeights.set(n, (await values(v)).slice());

  model.addLora(makeLoraConfig({ rank: 4, alpha: 8 }), 1);
  // B starts at zero: the adapted model starts exactly where the base is.
  assert.deepEqual(await lp(model, probe), before);
  const mods = loraModules(model.config, model.lora!);
  assert.equal(mods.length, 2 * 7);
  assert.equal(model.variables().length, 2 * mods.length);
  assert.ok(model.variables().every((v) => v.name.includes('.lora_')));
  assert.ok([...model.params.values()].every((v) => !v.trainable));

  const reference = model.base();
  // The reference shares the base's variables: no second copy of the weights.
  for (const [n, v] of model.params) assert.equal(reference.params.get(n), v);
  assert.equal(reference.adapters.size, 0);

  // Gradients of a loss through the whole model reach only the adapters.
  const { grads, value } = tf.variableGrads(
    () => tf.neg(tf.sum(tokenLogprobs(model, tf.tensor2d([probe], [1, probe.length], 'int32')).logprobs)) as tf.Scalar,
    model.variables(),
  );
  assert.deepEqual(
    Object.keys(grads).sort(),
    model
      .variables()
      .map((v) => v.name)
      .sort(),
  );
  // B's gradient is non-zero from the first step (A is random); A's is zero while B is zero.
  assert.ok(Object.entries(grads).some(([n, g]) => n.includes('lora_B') && tf.max(tf.abs(g)).dataSync()[0]! > 0));
  tf.dispose([...Object.values(grads), value]);

  const trainer = new Trainer(model, makeObjective('sft'), { lr: 1e-2, padId: tok.padId });
  const losses: number[] = [];
  for (let i = 0; i < 6; i++) losses.push((await trainer.trainStep(exps)).loss);
  assert.ok(losses[5]! < losses[0]! - 0.1, `SFT loss fell: ${losses.map((l) => l.toFixed(3)).join(' ')}`);
  const state = await trainer.optimizer.state();
  assert.deepEqual(
    Object.keys(state.m).sort(),
    model
      .variables()
      .map((v) => v.name)
      .sort(),
    'optimiser moments exist for the adapters only',
  );
  for (const [n, v] of model.params) assert.deepEqual(await values(v), baseWeights.get(n), `${n} unchanged`);
  const after = await lp(model, probe);
  assert.ok(maxDiff(after, before) > 0.05, 'the adapted model moved');
  assert.deepEqual(await lp(reference, probe), before, 'the reference is exactly the base');
  reference.dispose(); // a view: frees nothing of the model's
  assert.deepEqual(await lp(model, probe), after);
  trainer.dispose();
  model.dispose();
});

test('dropout applies in training passes only', async () => {
  const ck = loadCheckpoint(base);
  const model = ck.model.addLora(makeLoraConfig({ rank: 4, dropout: 0.5 }), 2);
  // Non-zero B so the adapters matter.
  for (const [n, v] of model.adapters)
    if (n.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.5, 'float32', 3));
  const ids = [1, 2, 3, 4, 5, 6, 7, 8];
  const a = await lp(model, ids);
  assert.deepEqual(await lp(model, ids), a, 'scoring is deterministic');
  assert.ok(maxDiff(await lp(model, ids, true), a) > 1e-3, 'a training pass drops adapter inputs');
  model.dispose();
});

test('a LoRA checkpoint saves base + PEFT adapter files and loads back identically; hf export merges; peft export reloads on the base', async () => {
  const ck = loadCheckpoint(base);
  const model = ck.model.addLora(
    makeLoraConfig({ rank: 4, alpha: 16, target_modules: ['q_proj', 'v_proj', 'down_proj'] }),
    3,
  );
  for (const [n, v] of model.adapters)
    if (n.includes('lora_B')) v.assign(tf.randomNormal(v.shape, 0, 0.3, 'float32', 4));
  const ids = ck.tokenizer!.encode('The LoRA model says hello, 42 times.');
  const want = await lp(model, ids);
  const baseLp = await lp(model.base(), ids);
  assert.ok(maxDiff(want, baseLp) > 0.05);

  // Checkpoint: base weights unmerged in model.safetensors, adapters in PEFT's files.
  const ckDir = join(root, 'ck-lora');
  await saveCheckpoint(model, ckDir, { version: 3, base_model: base }, ck.tokenizer);
  const back = loadCheckpoint(ckDir);
  assert.deepEqual(back.model.lora, model.lora);
  assert.deepEqual(await lp(back.model, ids), want);
  assert.deepEqual(await lp(back.model.base(), ids), baseLp);
  back.model.dispose();
  // The adapter weights carry a sha256 in rft.json too: an adapter file changed after saving is refused.
  const meta = JSON.parse(readFileSync(join(ckDir, 'rft.json'), 'utf8')) as { adapter_sha256?: string };
  assert.match(meta.adapter_sha256 ?? '', /^[0-9a-f]{64}$/);
  const damaged = join(root, 'ck-lora-damaged');
  cpSync(ckDir, damaged, { recursive: true });
  const bytes = readFileSync(join(damaged, ADAPTER_WEIGHTS_FILE));
  bytes[bytes.length - 3] ^= 0x01; // one bit of the last tensor's data: still finite, still loads without the digest
  writeFileSync(join(damaged, ADAPTER_WEIGHTS_FILE), bytes);
  assert.throws(
    () => loadCheckpoint(damaged),
    (e: Error) => e.message.includes(ADAPTER_WEIGHTS_FILE) && /does not match adapter_sha256/.test(e.message),
  );

  // hf: merged weights in the model's own layout; re-imports as a plain model with the same log-probs.
  const hfDir = await exportHf(model, ck.tokenizer, join(root, 'hf-merged'));
  const merged = loadCheckpoint(hfDir);
  assert.equal(merged.model.lora, undefined);
  assertF32Close(await lp(merged.model, ids), want, ULPS.forward, 'merged export');
  merged.model.dispose();
  // mergeAdapters() folds them in place: a plain model with the same log-probs.
  const folded = loadCheckpoint(ckDir).model.mergeAdapters();
  assert.equal(folded.lora, undefined);
  assert.equal(folded.adapters.size, 0);
  assertF32Close(await lp(folded, ids), want, ULPS.forward, 'mergeAdapters()');
  folded.dispose();

  // peft: PEFT's names, shapes and config; the adapter files next to the base folder load it back.
  const peftDir = await exportPeft(model, join(root, 'peft'), base);
  const cfg = JSON.parse(readFileSync(join(peftDir, ADAPTER_CONFIG_FILE), 'utf8'));
  assert.equal(cfg.peft_type, 'LORA');
  assert.equal(cfg.task_type, 'CAUSAL_LM');
  assert.equal(cfg.r, 4);
  assert.equal(cfg.lora_alpha, 16);
  assert.deepEqual(cfg.target_modules, ['q_proj', 'v_proj', 'down_proj']);
  assert.equal(cfg.base_model_name_or_path, base);
  const { entries } = readSafetensorsHeader(join(peftDir, ADAPTER_WEIGHTS_FILE));
  assert.equal(entries.size, 2 * 3 * 2);
  assert.deepEqual(entries.get('base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight')?.shape, [4, 32]);
  assert.deepEqual(entries.get('base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight')?.shape, [32, 4]);
  assert.deepEqual(entries.get('base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight')?.shape, [16, 4]);
  assert.deepEqual(entries.get('base_model.model.model.layers.1.mlp.down_proj.lora_A.weight')?.shape, [4, 48]);
  const onBase = makeHfModel(join(root, 'qwen2-plus-adapter'), QWEN2);
  for (const f of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]) copyFileSync(join(peftDir, f), join(onBase, f));
  const withAdapter = loadCheckpoint(onBase);
  assert.deepEqual(await lp(withAdapter.model, ids), want);
  withAdapter.model.dispose();
  model.dispose();
});

test('adapter files PEFT features this project does not reproduce are refused by field', async () => {
  const dir = makeHfModel(join(root, 'qwen2-bad-adapter'), QWEN2);
  const ck = loadCheckpoint(dir);
  ck.model.addLora(makeLoraConfig({ rank: 2, target_modules: ['q_proj'] }));
  await exportPeft(ck.model, join(root, 'peft-bad'), dir);
  ck.model.dispose();
  for (const f of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]) copyFileSync(join(root, 'peft-bad', f), join(dir, f));
  const cfgFile = join(dir, ADAPTER_CONFIG_FILE);
  const good = JSON.parse(readFileSync(cfgFile, 'utf8'));
  for (const [field, value] of [
    ['use_dora', true],
    ['peft_type', 'IA3'],
    ['target_modules', ['q_proj', 'embed_tokens']],
    ['rank_pattern', { q_proj: 8 }],
  ] as const) {
    writeFileSync(cfgFile, JSON.stringify({ ...good, [field]: value }));
    assert.throws(
      () => loadCheckpoint(dir),
      (e: Error) => e.message.includes(ADAPTER_CONFIG_FILE) && e.message.includes(`field '${field}'`),
      field,
    );
  }
  // A shape that does not match r: refused by tensor name.
  writeFileSync(cfgFile, JSON.stringify({ ...good, r: 3 }));
  assert.throws(() => loadCheckpoint(dir), /q_proj\.lora_A\.weight.*shape|shape.*q_proj/);
  writeFileSync(cfgFile, JSON.stringify(good));
  loadCheckpoint(dir).model.dispose();
});
