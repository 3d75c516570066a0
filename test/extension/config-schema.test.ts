// The *.rft.yaml JSON schema is generated from the zod schema (never stale), contributed to the YAML
// extension, and drives the extension's own completion and hover where that extension is absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACKAGE, vscode } from '../../tools/fake-vscode/harness.js';
import { ROOT } from '../../tools/spawn-serve.js';
import { validateRunConfig } from '../../backend/core/config.js';

const { schemaText, SCHEMA_FILE, objectDocs } = await import('../../scripts/config-schema.js');
const { parentPath, nodeAt, hoverAt, completionsAt, ConfigSchemaProvider } = await import(
  '../../src/config-schema-lang.js'
);

test('the committed schema is what the zod schema generates (run: npx tsx scripts/config-schema.ts)', () => {
  assert.equal(
    readFileSync(SCHEMA_FILE, 'utf8'),
    schemaText(),
    'media/schemas/rft-config.schema.json is stale: regenerate it with npx tsx scripts/config-schema.ts',
  );
  const yaml = (PACKAGE.contributes as unknown as { yamlValidation: { fileMatch: string[]; url: string }[] })
    .yamlValidation;
  assert.deepEqual(yaml[0]!.fileMatch, ['*.rft.yaml', '*.rft.yml']);
  assert.ok(existsSync(join(ROOT, yaml[0]!.url)), 'the contributed schema file exists');
});

test('schema shape: strict objects, enums, defaults, bounds and the source comments as descriptions', () => {
  const s = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8'));
  assert.equal(s.additionalProperties, false, 'unknown top-level keys are flagged');
  assert.deepEqual(s.properties.mode.enum, ['both', 'explore', 'train', 'bench', 'serve']);
  // trainer.lr has no one default: 1e-3 from scratch, `auto` from a checkpoint (core/trainer-defaults.ts), said in its description.
  assert.equal(s.properties.trainer.properties.lr.default, undefined);
  assert.equal(validateRunConfig({ taskset: { builtin: 'reverse' }, workflow: {} }).config!.trainer.lr, undefined);
  assert.match(
    s.properties.trainer.properties.lr.description,
    /1e-3 for a built-in size trained from scratch; `auto` from model\.checkpoint/,
  );
  // A positive number or the string auto.
  assert.deepEqual(s.properties.trainer.properties.lr.anyOf, [
    { type: 'number', exclusiveMinimum: 0 },
    { type: 'string', const: 'auto' },
  ]);
  // trainer.batch_size has no one default either: one explore step's rollouts, or 64 for a stage that only trains (coordinator/stage-batch.ts).
  assert.equal(s.properties.trainer.properties.batch_size.default, undefined);
  assert.match(
    s.properties.trainer.properties.batch_size.description,
    /Unset: a stage that explores trains one explore step's rollouts/,
  );
  assert.equal(s.properties.trainer.additionalProperties, false);
  assert.match(s.properties.trainer.properties.min_lr_ratio.description, /min_lr_ratio \* lr/);
  assert.match(s.properties.stages.items.properties.steps.description, /Trainer steps in this stage/);
  assert.match(s.properties.taskset.properties.format.description, /prompt_key/);
  for (const k of Object.keys(s.properties)) assert.ok(s.properties[k].description, `${k} has a description`);
  const docs = objectDocs(
    'const a = z.object({\n  /** The x.\n   * More. */\n  x: z.number(),\n  // not a doc\n  y: z.string(),\n});',
  );
  assert.deepEqual(docs, [{ keys: ['x', 'y'], docs: new Map([['x', 'The x. More.']]) }]);
});

const CONFIG = `name: tiny
model:
  size: tiny-0.4m
trainer:
  lr: 0.001
  ba
stages:
  - name: sft
    steps: 10
    algorithm:
      name: sft
  - name: mix
    st
mode: 
`.split('\n');

test('key paths from indentation, list items included', () => {
  assert.deepEqual(parentPath(CONFIG, 4, 2), ['trainer']);
  assert.deepEqual(parentPath(CONFIG, 8, 4), ['stages', '[]']);
  assert.deepEqual(parentPath(CONFIG, 7, 4, 2), ['stages', '[]']);
  assert.deepEqual(parentPath(CONFIG, 10, 6), ['stages', '[]', 'algorithm']);
  assert.deepEqual(parentPath(CONFIG, 12, 4), ['stages', '[]']);
  assert.deepEqual(parentPath(CONFIG, 14, 0), []);
  assert.equal(nodeAt(['stages', '[]', 'algorithm', 'name'])?.type, 'string');
  assert.equal(nodeAt(['trainer', 'nope']), undefined);
});

test('hover: the key path, type with bounds, default and description', () => {
  assert.match(
    hoverAt(CONFIG, 4)!,
    /^\*\*trainer\.lr\*\* · number \(> 0\) \| "auto"\n\nA positive number, or `auto`[\s\S]*Unset: 1e-3 for a built-in size trained from scratch/,
  );
  assert.match(hoverAt(CONFIG, 8)!, /^\*\*stages\.steps\*\* · integer \(> 0\)\n\nTrainer steps in this stage\.$/);
  assert.match(
    hoverAt(CONFIG, 13)!,
    /^\*\*mode\*\* · "both" \| "explore" \| "train" \| "bench" \| "serve" · default `"both"`\n\nboth: explore and train/,
  );
  assert.equal(hoverAt(CONFIG, 5), undefined, 'no key on a half-typed line');
});

test('completion: the keys of the mapping at the cursor minus those written; enum values after a key', () => {
  const trainer = completionsAt(CONFIG, 5, 4).map((c) => c.label);
  assert.ok(trainer.includes('batch_size') && trainer.includes('lr_decay'));
  assert.ok(!trainer.includes('lr'), 'lr is already there');
  assert.ok(!trainer.includes('size'), 'no keys of another section');
  const stage = completionsAt(CONFIG, 12, 6).map((c) => c.label);
  assert.ok(stage.includes('steps') && stage.includes('wall_seconds') && stage.includes('lr_decay'));
  assert.ok(!stage.includes('name'), 'this stage has its name');
  const withBlank = [...CONFIG.slice(0, 9), '    ', ...CONFIG.slice(9)];
  const first = completionsAt(withBlank, 9, 4).map((c) => c.label);
  assert.ok(
    !first.includes('steps') && !first.includes('algorithm') && first.includes('mode'),
    'siblings of the first stage item',
  );
  const top = completionsAt([...CONFIG.slice(0, 14), 'sy'], 14, 2);
  assert.ok(!top.some((c) => c.label === 'mode'), 'mode is written below');
  assert.ok(top.some((c) => c.label === 'synchronizer' && c.insert === 'synchronizer:\n'));
  assert.ok(!top.some((c) => c.label === 'trainer' || c.label === 'stages'));
  assert.deepEqual(
    completionsAt(CONFIG, 13, 6).map((c) => c.label),
    ['both', 'explore', 'train', 'bench', 'serve'],
  );
  const lr = completionsAt(['trainer:', '  lr_decay: '], 1, 12);
  assert.deepEqual(
    lr.map((c) => `${c.label}${c.detail === 'default' ? '*' : ''}`),
    ['constant*', 'cosine', 'linear'],
  );
  assert.deepEqual(
    completionsAt(['monitor:', '  report: '], 1, 10).map((c) => c.label),
    ['true', 'false'],
  );
});

test('providers answer through the VS Code API and stand back when the YAML extension is installed', async () => {
  const p = new ConfigSchemaProvider();
  const doc = vscode.textDocument(vscode.Uri.file('/w/train.rft.yaml'), CONFIG.join('\n'));
  const hover = p.provideHover(doc as never, new vscode.Position(4, 3) as never) as unknown as {
    contents: { value: string };
  };
  assert.match(hover.contents.value, /trainer\.lr/);
  const items = p.provideCompletionItems(doc as never, new vscode.Position(5, 4) as never) as unknown as {
    label: string;
    kind: number;
    insertText: string;
  }[];
  assert.ok(
    items.some(
      (i) =>
        i.label === 'batch_size' && i.kind === vscode.CompletionItemKind.Property && i.insertText === 'batch_size: ',
    ),
  );
  const { yamlExtensionPresent } = await import('../../src/config-schema-lang.js');
  assert.equal(yamlExtensionPresent(), false);
  vscode.installedExtensions.add('redhat.vscode-yaml');
  assert.equal(yamlExtensionPresent(), true);
  vscode.installedExtensions.clear();
});

test('completion at algorithm.name: (top level and in a stage) and workflow.name / reward offers the registered names', () => {
  const labels = (lines: string[], at: number) => completionsAt(lines, at, lines[at]!.length).map((c) => c.label);
  const algos = labels(['algorithm:', '  name: '], 1);
  for (const a of ['grpo', 'mix', 'ppo', 'sft', 'dpo']) assert.ok(algos.includes(a), `${a} in ${algos}`);
  assert.ok(labels(['stages:', '  - name: warm', '    algorithm:', '      name: '], 3).includes('sft'));
  assert.ok(labels(['workflow:', '  name: '], 1).includes('single_turn'));
  assert.ok(labels(['workflow:', '  reward: '], 1).includes('math_answer'));
});
