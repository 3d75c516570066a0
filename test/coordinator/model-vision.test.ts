// The vision input of a run's model: derived for workflow `vision`, taken from `model.vision`,
// checked against the tasks' images and against a starting checkpoint, with errors naming the field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import { InputError } from '../../backend/core/errors.js';
import { initEngine } from '../../backend/model/engine.js';
import { presetConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { saveCheckpoint } from '../../backend/model/checkpoint.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { builtinTasksets } from '../../backend/explorer/tasksets/index.js';
import { runVisionConfig } from '../../backend/coordinator/model-vision.js';
import { initialModel } from '../../backend/coordinator/setup/model.js';

await initEngine();

function config(extra: Record<string, unknown>): RunConfig {
  const { config, issues } = validateRunConfig({
    taskset: { builtin: 'vision', size: 8 },
    workflow: { name: 'vision', reward: 'k12' },
    ...extra,
  });
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

const tasks = builtinTasksets.get('vision').generate(8, 0, 'train');
const tok = CharTokenizer.train(tasks.map((t) => t.prompt!));

test('workflow vision: the model gets a vision input sized from the images (16x16 at patch 4 = 16 patches)', () => {
  assert.deepEqual(runVisionConfig(config({}), tasks), { patchSize: 4, channels: 3, maxPatches: 16 });
  assert.deepEqual(runVisionConfig(config({ model: { vision: { patch_size: 8 } } }), tasks), {
    patchSize: 8,
    channels: 3,
    maxPatches: 4,
  });
  assert.deepEqual(runVisionConfig(config({ model: { vision: { patch_size: 4, max_patches: 32 } } }), tasks), {
    patchSize: 4,
    channels: 3,
    maxPatches: 32,
  });
  assert.equal(runVisionConfig(config({ workflow: { name: 'single_turn', reward: 'k12' } }), tasks), undefined);
  const m = initialModel(config({ model: { size: 'tiny-0.4m', max_seq_len: 64 } }), tok, tasks);
  try {
    assert.deepEqual(m.config.vision, { patchSize: 4, channels: 3, maxPatches: 16 });
    assert.ok(m.variables().some((v) => v.name.endsWith('vision.patch_embed.weight')));
  } finally {
    m.dispose();
  }
});

test('model.vision: too few patches for the images, or no images to size from, names the field', () => {
  assert.throws(
    () => runVisionConfig(config({ model: { vision: { patch_size: 4, max_patches: 8 } } }), tasks),
    (e: unknown) =>
      e instanceof InputError && e.location.field === 'model.vision.max_patches' && /needs 16 patches/.test(e.message),
  );
  assert.throws(
    () => runVisionConfig(config({}), []),
    (e: unknown) => e instanceof InputError && e.location.field === 'model.vision.max_patches',
  );
  const bad = validateRunConfig({
    taskset: { builtin: 'vision' },
    workflow: { name: 'vision', reward: 'k12' },
    model: { vision: { patch_size: 0 } },
  });
  assert.equal(bad.issues[0]?.path, 'model.vision.patch_size');
});

test('workflow vision from a checkpoint without a vision input: a clear error on model.checkpoint', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-vis-'));
  try {
    const plain = new Transformer(presetConfig('tiny-0.4m', tok.vocabSize, { maxSeqLen: 64 }), 1);
    await saveCheckpoint(plain, join(dir, 'ck'), { version: 0, step: 0 }, tok);
    plain.dispose();
    assert.throws(
      () => initialModel(config({ model: { checkpoint: join(dir, 'ck') } }), tok, tasks),
      (e: unknown) =>
        e instanceof InputError && e.location.field === 'model.checkpoint' && /no vision input/.test(e.message),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
