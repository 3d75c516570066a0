// The Models view's wording, the config lines Start Training writes for a model, which configs use
// a model, the export formats, and the HF-cache scan: pure functions, checked directly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import '../../tools/fake-vscode/setup.js';
import { MODEL_PRESETS } from '../../backend/model/config.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { hfCacheRoots, scanHfCache } from '../../backend/server/adapters/hf-cache.js';
import { modelName } from '../../backend/server/handlers/models.js';
import type { ImportedModel } from '../../backend/core/protocol.js';

const { formatParams, cardRows, modelLines, trainerLines, configNameFor, PRESETS, trainingLine } = await import(
  '../../src/models/model-card.js'
);
const { configModel, namesModel, usesOf } = await import('../../src/models/config-uses.js');
const { exportFormats, exportFolderName } = await import('../../src/models/export-formats.js');
const { configPath } = await import('../../src/models/model-pick.js');
const { configTemplate } = await import('../../src/templates.js');

const QWEN: ImportedModel = {
  dir: '/c/hub/models--Qwen--Qwen2.5-0.5B-Instruct/snapshots/abc',
  name: 'Qwen/Qwen2.5-0.5B-Instruct',
  importedAt: 0,
  architecture: 'Qwen2ForCausalLM',
  parameters: 494_032_768,
  dtype: 'BF16',
  layers: 24,
  hidden: 896,
  heads: 14,
  kvHeads: 2,
  vocab: 151936,
  maxSeqLen: 32768,
  tiedEmbeddings: true,
  tokenizer: { kind: 'hf', vocab: 151665 },
  chatTemplate: '{% for m in messages %}…',
  lora: null,
};

test('sizes read as people write them', () => {
  assert.deepEqual([494_032_768, 1_235_814_400, 134_515_008, 4_812_000, 53_248, 999].map(formatParams), [
    '494M',
    '1.24B',
    '135M',
    '4.81M',
    '53.2k',
    '999',
  ]);
});

test('the card: architecture, size, dtype, tokenizer, LoRA or full per config, path', () => {
  assert.deepEqual(cardRows(QWEN, [{ config: 'a.rft.yaml', lora: { rank: 8 } }, { config: 'b.rft.yaml' }]), [
    { label: 'Architecture', value: 'Qwen2ForCausalLM · 24 layers, hidden 896, 14 heads (2 KV)' },
    { label: 'Size', value: '494M parameters (494,032,768)' },
    { label: 'dtype', value: 'BF16' },
    { label: 'Tokenizer', value: 'tokenizer.json, 151,665 tokens, chat template' },
    { label: 'Training', value: 'LoRA rank 8 (a.rft.yaml); full fine-tuning (b.rft.yaml)' },
    { label: 'Path', value: QWEN.dir },
  ]);
  assert.equal(trainingLine([]), 'no run config uses it yet');
  assert.equal(
    cardRows({ ...QWEN, lora: { rank: 4, adapterParameters: 10 } }, []).find((r) => r.label === 'Training')!.value,
    'LoRA checkpoint (rank 4)',
  );
});

test('the built-in sizes offered are the backend presets', () => {
  assert.deepEqual([...PRESETS], Object.keys(MODEL_PRESETS));
});

test('the template with an imported model: model.checkpoint (+ lora), no tokenizer section; valid; a preset keeps the char tokenizer', () => {
  const lora = parse(
    configTemplate(
      'tasksets/math.jsonl',
      'math',
      modelLines({ checkpoint: 'models/qwen', name: 'Qwen/Qwen2.5-0.5B', lora: true }),
    ),
  ) as Record<string, unknown>;
  assert.deepEqual(lora.model, { checkpoint: 'models/qwen', lora: { rank: 8, alpha: 16 } });
  assert.equal(lora.tokenizer, undefined);
  assert.deepEqual(validateRunConfig(lora).issues, []);
  const full = parse(
    configTemplate('tasksets/math.jsonl', 'math', modelLines({ checkpoint: '/abs/qwen', name: 'q', lora: false })),
  ) as Record<string, unknown>;
  assert.deepEqual(full.model, { checkpoint: '/abs/qwen' });
  const preset = parse(configTemplate('tasksets/math.jsonl', 'math', modelLines({ preset: 'small-3m' }))) as Record<
    string,
    unknown
  >;
  assert.deepEqual(preset.model, { size: 'small-3m', max_seq_len: 256 });
  assert.deepEqual(preset.tokenizer, { kind: 'char' });
  // The default stays what it was.
  assert.equal(
    configTemplate('tasksets/math.jsonl'),
    configTemplate('tasksets/math.jsonl', 'math', modelLines({ preset: 'tiny-0.4m' })),
  );
  assert.equal(configNameFor('Qwen/Qwen2.5-0.5B-Instruct'), 'train-qwen2.5-0.5b-instruct.rft.yaml');
});

test('the template for an imported model writes lr auto and clip with why (full and LoRA), never a fixed lr; a preset writes none', () => {
  const m = { checkpoint: 'models/qwen', name: 'Qwen/Qwen2.5-0.5B' };
  const lora = configTemplate(
    'tasksets/math.jsonl',
    'math',
    modelLines({ ...m, lora: true }),
    {},
    trainerLines({ ...m, lora: true }),
  );
  assert.match(lora, /# Qwen\/Qwen2\.5-0\.5B is pretrained: a fixed lr that suits one model wrecks or stalls another/);
  assert.match(lora, /set each step by how much the update changes the policy \(KL per token near 0\.01\)/);
  const cfg = validateRunConfig(parse(lora));
  assert.deepEqual(cfg.issues, []);
  assert.deepEqual(
    [cfg.config!.trainer.lr, cfg.config!.trainer.warmup_steps, cfg.config!.trainer.grad_clip],
    ['auto', undefined, 1],
  );
  const full = validateRunConfig(
    parse(
      configTemplate(
        'tasksets/math.jsonl',
        'math',
        modelLines({ ...m, lora: false }),
        {},
        trainerLines({ ...m, lora: false }),
      ),
    ),
  ).config!;
  assert.equal(full.trainer.lr, 'auto');
  assert.deepEqual(trainerLines({ preset: 'tiny-0.4m' }), []);
  assert.equal(
    validateRunConfig(parse(configTemplate('tasksets/math.jsonl'))).config!.trainer.lr,
    undefined,
    'a preset keeps the from-scratch default (1e-3)',
  );
});

test('the config path of a model: relative inside the workspace, absolute outside', () => {
  assert.equal(configPath('/w/models/qwen', '/w'), 'models/qwen');
  assert.equal(
    configPath('/home/u/.cache/huggingface/hub/models--a--b/snapshots/r', '/w'),
    '/home/u/.cache/huggingface/hub/models--a--b/snapshots/r',
  );
});

test('which configs use a model: its folder, or the HF-cache entry holding its snapshot; relative to the config', () => {
  const entry = '/c/hub/models--Qwen--Qwen2.5-0.5B-Instruct';
  assert.ok(namesModel(entry, QWEN.dir));
  assert.ok(!namesModel('/c/hub/models--Qwen--Other', QWEN.dir));
  const configs = [
    { file: '/w/a.rft.yaml', rel: 'a.rft.yaml', text: `model:\n  checkpoint: ${entry}\n  lora: { rank: 4 }\n` },
    { file: '/w/sub/b.rft.yaml', rel: 'sub/b.rft.yaml', text: 'model:\n  checkpoint: ../m/local\n' },
    { file: '/w/c.rft.yaml', rel: 'c.rft.yaml', text: 'model:\n  size: tiny-0.4m\n' },
    { file: '/w/d.rft.yaml', rel: 'd.rft.yaml', text: 'model: [unclosed\n' },
  ];
  assert.deepEqual(usesOf(QWEN.dir, configs), [{ config: 'a.rft.yaml', lora: { rank: 4 } }]);
  assert.deepEqual(usesOf('/w/m/local', configs), [{ config: 'sub/b.rft.yaml' }]);
  assert.equal(configModel(configs[3]!), undefined);

  // One mistyped indent in a config that named the model: its last good reading, said to be stale (issue 40 item 10).
  const typo = { ...configs[0]!, text: `model:\n  checkpoint: ${entry}\n   lora: { rank: 4 }\n` };
  assert.deepEqual(usesOf(QWEN.dir, [typo]), [{ config: 'a.rft.yaml', lora: { rank: 4 }, stale: true }]);
  assert.equal(trainingLine(usesOf(QWEN.dir, [typo])), 'LoRA rank 4 (a.rft.yaml: it does not parse now, as last read)');
});

test('export formats: PEFT only for a LoRA checkpoint, GGUF only with an HF tokenizer; folder names', () => {
  assert.deepEqual(
    exportFormats(false).map((f) => `${f.format}/${f.dtype}`),
    ['hf/f32', 'gguf/f32', 'gguf/f16'],
  );
  assert.deepEqual(
    exportFormats(true).map((f) => `${f.format}/${f.dtype}`),
    ['hf/f32', 'peft/f32', 'gguf/f32', 'gguf/f16'],
  );
  // A model trained from scratch (this project's tokenizer) has no GGUF tokenizer to write.
  assert.deepEqual(
    exportFormats(false, false).map((f) => f.format),
    ['hf'],
  );
  assert.deepEqual(
    exportFormats(true, false).map((f) => f.format),
    ['hf', 'peft'],
  );
  const [hf, , , f16] = exportFormats(true);
  assert.equal(
    exportFolderName({ runName: 'My Run', version: 60, path: '/w/.rft/runs/r/checkpoints/v60' }, f16!),
    'my-run-v60-gguf-f16',
  );
  assert.equal(exportFolderName({ path: '/w/ckpts/best/' }, hf!), 'best-hf');
});

test('HF cache: roots from HF_HUB_CACHE, HF_HOME, the home default; snapshots with a config.json, refs/main first', () => {
  assert.deepEqual(hfCacheRoots({ HF_HUB_CACHE: '/x', HF_HOME: '/h' }, '/home/u'), [
    '/x',
    '/h/hub',
    '/home/u/.cache/huggingface/hub',
  ]);
  assert.deepEqual(hfCacheRoots({}, '/home/u'), ['/home/u/.cache/huggingface/hub']);
  const root = mkdtempSync(join(tmpdir(), 'rft-hfcache-'));
  try {
    const e = join(root, 'models--org--name');
    for (const rev of ['aaa', 'bbb', 'ccc']) mkdirSync(join(e, 'snapshots', rev), { recursive: true });
    writeFileSync(join(e, 'snapshots', 'aaa', 'config.json'), '{}');
    writeFileSync(join(e, 'snapshots', 'bbb', 'config.json'), '{}');
    mkdirSync(join(e, 'refs'));
    writeFileSync(join(e, 'refs', 'main'), 'bbb');
    mkdirSync(join(root, 'datasets--org--data', 'snapshots', 'x'), { recursive: true });
    assert.deepEqual(scanHfCache([root, join(root, 'missing')]), [
      { repo: 'org/name', revision: 'bbb', dir: join(e, 'snapshots', 'bbb') },
      { repo: 'org/name', revision: 'aaa', dir: join(e, 'snapshots', 'aaa') },
    ]);
    assert.equal(modelName(join(e, 'snapshots', 'bbb')), 'org/name');
    assert.equal(modelName('/models/my-llama'), 'my-llama');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
