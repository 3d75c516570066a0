// The spread of pretrained models (tools/pretrained-spread, issue 41 item 2) that the lr-auto bench
// and the lr-auto CI test train: the specs cover what the issue asks for, and a model of it is a
// Hugging Face folder that imports as a user's model does, partly right on its held-out tasks, and is
// taken from the cache on the second call.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint } from '../../backend/model/checkpoint.js';
import { SPREAD, splitTasks, spreadAccuracy, spreadModel } from '../../tools/pretrained-spread/index.js';

await initEngine();
const cache = mkdtempSync(join(tmpdir(), 'rft-spread-test-'));
test.after(() => rmSync(cache, { recursive: true, force: true }));

test('the spread covers hidden 64..512, 2..8 layers, char and BPE, Llama and Qwen2, tied and untied, five tasks', () => {
  assert.ok(SPREAD.length >= 5);
  const hidden = SPREAD.map((s) => s.hidden);
  const layers = SPREAD.map((s) => s.layers);
  assert.equal(Math.min(...hidden), 64);
  assert.equal(Math.max(...hidden), 512);
  assert.equal(Math.min(...layers), 2);
  assert.equal(Math.max(...layers), 8);
  assert.deepEqual(new Set(SPREAD.map((s) => s.tokenizer)), new Set(['char', 'bpe']));
  assert.deepEqual(new Set(SPREAD.map((s) => s.layout)), new Set(['llama', 'qwen2']));
  assert.deepEqual(new Set(SPREAD.map((s) => s.tied)), new Set([true, false]));
  assert.equal(new Set(SPREAD.map((s) => s.task.name)).size, SPREAD.length);
  assert.equal(new Set(SPREAD.map((s) => s.name)).size, SPREAD.length);
});

test('a spread model is an HF folder that imports as written, partly right, and cached', async () => {
  const m = await spreadModel('last-h64', cache);
  const cfg = JSON.parse(readFileSync(join(m.dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  assert.deepEqual(cfg.architectures, ['LlamaForCausalLM']);
  assert.equal(cfg.tie_word_embeddings, true);
  assert.equal(cfg.hidden_size, 64);
  assert.ok(m.accuracy > 0.2 && m.accuracy < 0.8, `greedy held-out accuracy after pretraining ${m.accuracy}`);
  // Imported the way a run imports model.checkpoint: the same greedy accuracy as before the export.
  const loaded = loadCheckpoint(m.dir);
  assert.ok(loaded.tokenizer, 'the folder carries its tokenizer');
  const acc = await spreadAccuracy(loaded.model, loaded.tokenizer, m.spec.task, splitTasks(m.spec.task).eval);
  loaded.model.dispose();
  assert.equal(acc, m.accuracy);
  const written = statSync(join(m.dir, 'model.safetensors')).mtimeMs;
  const again = await spreadModel('last-h64', cache);
  assert.equal(again.dir, m.dir);
  assert.equal(statSync(join(again.dir, 'model.safetensors')).mtimeMs, written, 'from the cache, not rebuilt');
});
