// Import Model…, the Models view's cards and actions, Start Training with an imported model and
// Export Checkpoint…, through the real extension (fake vscode) and a real `rft serve`, on tiny
// random-weight Hugging Face models written the way transformers saves them, one of them in an
// HF-cache layout (models--org--name/snapshots/<rev>/) found through HF_HUB_CACHE.
import { test, before, beforeEach, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  activateWith,
  deactivateFrom,
  type fakeContext,
  until,
  vscode,
  workspaceDir,
} from '../../tools/fake-vscode/harness.js';
import { makeHfModel, makeHubEntry, TINY_QWEN2 } from '../../tools/hf-model.js';
import { initEngine } from '../../backend/model/engine.js';
import { loadCheckpoint, saveCheckpoint } from '../../backend/model/checkpoint.js';
import { countParams } from '../../backend/model/config.js';
import { makeLoraConfig } from '../../backend/model/lora.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { parse } from 'yaml';
import type { StudioApi } from '../../src/extension.js';
import type { ImportedModel } from '../../backend/core/protocol.js';

const root = mkdtempSync(join(tmpdir(), 'rft-model-ext-'));
const cache = join(root, 'hub');
const REV = '0123456789abcdef0123456789abcdef01234567';
const snapshot = join(cache, 'models--acme--tiny-qwen2', 'snapshots', REV);
const QWEN2 = TINY_QWEN2;

let api: StudioApi;
let ctx: ReturnType<typeof fakeContext>;
let ws: string;
let gpt2: string;
const savedCache = process.env.HF_HUB_CACHE;

type Node = { kind: string; model: ImportedModel; row?: { label: string; value: string } };
const modelsView = () => vscode.recorded.treeViews.get('rftStudio.models')!;
/** The Models view as VS Code reads it: each model's item and its card rows. */
async function cards(): Promise<{ label?: string; description?: string; rows: Record<string, string> }[]> {
  const p = modelsView().provider as unknown as {
    getChildren(n?: Node): Promise<Node[]>;
    getTreeItem(n: Node): { label?: string; description?: string };
  };
  return Promise.all(
    (await p.getChildren()).map(async (n) => ({
      ...p.getTreeItem(n),
      rows: Object.fromEntries((await p.getChildren(n)).map((r) => [r.row!.label, r.row!.value])),
    })),
  );
}
/** Answers a quick pick with the item whose label matches (items may be plain strings). */
const pickLabel = (want: string | RegExp) => (items: { label: string }[] | string[]) =>
  (items as ({ label: string } | string)[]).find((i) => {
    const l = typeof i === 'string' ? i : i.label;
    return typeof want === 'string' ? l === want : want.test(l);
  });

beforeEach(() => {
  // Answers a test did not use must not answer the next test's prompts.
  for (const q of Object.values(vscode.answers)) q.length = 0;
});

before(async () => {
  await initEngine();
  vscode.resetFake();
  assert.equal(makeHubEntry(cache, 'acme/tiny-qwen2', REV, QWEN2).snapshot, snapshot);
  // A folder the user browses to, outside the workspace, with an architecture the project refuses.
  gpt2 = makeHfModel(join(root, 'gpt2-like'), { ...QWEN2, seed: 3 });
  const cfg = JSON.parse(readFileSync(join(gpt2, 'config.json'), 'utf8'));
  cfg.architectures = ['GPT2LMHeadModel'];
  writeFileSync(join(gpt2, 'config.json'), JSON.stringify(cfg));
  ws = workspaceDir({
    'tasksets/math.jsonl': '{"id":"a","prompt":"1+1?","answer":"2"}\n{"id":"b","prompt":"2+2?","answer":"4"}\n',
  });
  mkdirSync(join(ws, 'exports'));
  // Two checkpoints in the workspace: full weights, and LoRA adapters on the same base.
  const ck = loadCheckpoint(snapshot);
  await saveCheckpoint(ck.model, join(ws, 'ckpts', 'full-ck'), { version: 3 }, ck.tokenizer);
  ck.model.addLora(makeLoraConfig({ rank: 2 }));
  await saveCheckpoint(
    ck.model,
    join(ws, 'ckpts', 'lora-ck'),
    { version: 4, base_model: 'acme/tiny-qwen2' },
    ck.tokenizer,
  );
  ck.model.dispose();
  process.env.HF_HUB_CACHE = cache;
  ({ ctx, api } = await activateWith(ws));
});

after(async () => {
  await deactivateFrom(ctx);
  if (savedCache === undefined) delete process.env.HF_HUB_CACHE;
  else process.env.HF_HUB_CACHE = savedCache;
  rmSync(root, { recursive: true, force: true });
  rmSync(ws, { recursive: true, force: true });
});

test('Import Model… lists the HF-cache snapshot and Browse…; the chosen model is checked, remembered and shown as a card', async () => {
  let offered: string[] = [];
  vscode.answers.quickPick.push(
    (items) => ((offered = (items as { label: string }[]).map((i) => i.label)), pickLabel('acme/tiny-qwen2')(items)),
  );
  const m = (await vscode.commands.executeCommand('rftStudio.importModel')) as ImportedModel;
  assert.ok(offered.includes('acme/tiny-qwen2'), offered.join(', '));
  assert.ok(offered.includes('$(folder-opened) Browse…'));
  assert.equal(m.dir, snapshot);
  assert.equal(m.name, 'acme/tiny-qwen2');
  const ck = loadCheckpoint(snapshot);
  assert.equal(m.parameters, countParams(ck.model.config));
  ck.model.dispose();
  assert.match(
    vscode.recorded.messages.at(-1)!.message,
    /^Imported acme\/tiny-qwen2: Qwen2ForCausalLM, [\d.]+[kM] parameters, F32\.$/,
  );
  // Remembered in the workspace's list (.rft/models.json), and on the card in the sidebar.
  const saved = JSON.parse(readFileSync(join(ws, '.rft', 'models.json'), 'utf8')) as { models: ImportedModel[] };
  assert.deepEqual(
    saved.models.map((x) => x.dir),
    [snapshot],
  );
  const [card] = await until(async () => ((await cards()).length ? cards() : undefined), 'the model card');
  assert.equal(card!.label, 'acme/tiny-qwen2');
  assert.match(card!.description!, /^Qwen2ForCausalLM · [\d.]+[kM] · F32$/);
  assert.match(card!.rows.Architecture!, /^Qwen2ForCausalLM · 2 layers, hidden 32, 4 heads \(2 KV\)$/);
  assert.match(card!.rows.Size!, new RegExp(`\\(${m.parameters.toLocaleString('en-US')}\\)`));
  assert.equal(card!.rows.dtype, 'F32');
  assert.match(card!.rows.Tokenizer!, /^tokenizer\.json, 151,\d{3} tokens, chat template$/);
  assert.equal(card!.rows.Training, 'no run config uses it yet');
  assert.equal(card!.rows.Path, snapshot);
});

test('Import Model… -> Browse… on an unsupported architecture: refused by name, nothing remembered', async () => {
  vscode.recorded.messages.length = 0;
  vscode.answers.quickPick.push(pickLabel(/Browse/));
  vscode.answers.openDialog.push([vscode.Uri.file(gpt2)]);
  const m = await vscode.commands.executeCommand('rftStudio.importModel');
  assert.equal(m, undefined);
  const err = vscode.recorded.messages.find((x) => x.kind === 'error');
  assert.ok(err, 'an error is shown');
  assert.match(err.message, /^Import model: .*config\.json.*field 'architectures'.*GPT2LMHeadModel.*not supported/);
  const list = await api.services!.client.request('models/list', {});
  assert.deepEqual(
    list.map((x) => x.name),
    ['acme/tiny-qwen2'],
  );
});

test('Start Training… -> template: the model pick offers the built-in sizes and the imported model; LoRA writes model.checkpoint + model.lora and the config validates', async () => {
  vscode.recorded.prompts.length = 0;
  let offered: string[] = [];
  vscode.answers.quickPick.push(pickLabel(/Create a config from the template/));
  vscode.answers.quickPick.push(
    (items) => (
      (offered = (items as { label: string; kind?: number }[]).filter((i) => i.kind !== -1).map((i) => i.label)),
      pickLabel('acme/tiny-qwen2')(items)
    ),
  );
  vscode.answers.quickPick.push(pickLabel(/^LoRA/));
  // The first config: no run is started from it here (the next test starts one).
  vscode.workspace.isTrusted = true;
  const started: string[] = [];
  const listen = api.services!.client.onNotification('run/status', (r) => started.push(r.id));
  await vscode.commands.executeCommand('rftStudio.startTraining');
  listen.dispose();
  assert.deepEqual(offered, [
    'tiny-0.4m',
    'small-3m',
    'base-10m',
    'medium-25m',
    'large-100m',
    'acme/tiny-qwen2',
    '$(cloud-download) Import Model…',
  ]);
  assert.deepEqual(
    vscode.recorded.prompts.filter((p) => p.kind === 'quickPick').map((p) => p.options.title),
    ['Start training: config', 'Start training: model', 'Train acme/tiny-qwen2: LoRA or full'],
  );
  const file = join(ws, 'train.rft.yaml');
  const text = readFileSync(file, 'utf8');
  const raw = parse(text) as { model: Record<string, unknown>; tokenizer?: unknown };
  assert.deepEqual(raw.model, { checkpoint: snapshot, lora: { rank: 8, alpha: 16 } });
  assert.equal(raw.tokenizer, undefined, 'an imported model brings its own tokenizer');
  const v = validateRunConfig(raw);
  assert.deepEqual(v.issues, []);
  // A pretrained model's trainer settings, written out: lr auto (no fixed lr, issue 41), grad clip 1.
  assert.deepEqual(
    [v.config!.trainer.lr, v.config!.trainer.warmup_steps, v.config!.trainer.grad_clip],
    ['auto', undefined, 1],
  );
  assert.match(text, /# acme\/tiny-qwen2 is pretrained: a fixed lr that suits one model wrecks or stalls another/);
  assert.deepEqual((await api.services!.client.request('config/validate', { file })).issues, []);
  // A run would be stopped at once below if one was started (the template is opened for review first).
  for (const id of new Set(started))
    await api.services!.client.request('runs/stop', { runId: id }).catch(() => undefined);
  // The card now says how the config trains it.
  const [card] = await until(
    async () => ((await cards())[0]?.rows.Training?.includes('LoRA') ? cards() : undefined),
    'the card names the LoRA config',
  );
  assert.equal(card!.rows.Training, 'LoRA rank 8 (train.rft.yaml)');
});

test('Create a config from the template never overwrites: an edited train.rft.yaml stays, the new config is train-2.rft.yaml', async () => {
  const file = join(ws, 'train.rft.yaml');
  const edited = readFileSync(file, 'utf8') + "# the user's own edits\n";
  writeFileSync(file, edited);
  vscode.answers.quickPick.push(pickLabel(/Create a config from the template/));
  vscode.answers.quickPick.push(pickLabel('acme/tiny-qwen2'));
  vscode.answers.quickPick.push(pickLabel(/^LoRA/));
  await vscode.commands.executeCommand('rftStudio.startTraining');
  assert.equal(readFileSync(file, 'utf8'), edited, 'the edited config is untouched');
  const second = join(ws, 'train-2.rft.yaml');
  assert.ok(existsSync(second), 'the new config has a new name');
  // Its run name is its own too (not `my-run` in every config): taken from the taskset and the model.
  const nameOf = (f: string) => (parse(readFileSync(f, 'utf8')) as { name: string }).name;
  assert.equal(nameOf(file), 'math-acme-tiny-qwen2');
  assert.equal(nameOf(second), 'math-acme-tiny-qwen2-2');
  assert.deepEqual((parse(readFileSync(second, 'utf8')) as { model: unknown }).model, {
    checkpoint: snapshot,
    lora: { rank: 8, alpha: 16 },
  });
  rmSync(second);
});

test("the card's Start Training (full fine-tuning) writes its own config and starts a real run from the imported model; Reveal; Remove", async () => {
  vscode.answers.quickPick.push(pickLabel('Full fine-tuning'));
  const node = { kind: 'model', model: (await api.services!.client.request('models/list', {}))[0]! };
  const uri = (await vscode.commands.executeCommand('rftStudio.trainWithModel', node)) as { fsPath: string };
  assert.equal(uri.fsPath, join(ws, 'train-tiny-qwen2.rft.yaml'));
  const raw = parse(readFileSync(uri.fsPath, 'utf8')) as {
    model: Record<string, unknown>;
    trainer: Record<string, unknown>;
  };
  assert.deepEqual(raw.model, { checkpoint: snapshot });
  assert.equal(raw.trainer.lr, 'auto', 'full fine-tuning: lr auto, never a fixed lr');
  assert.ok(
    !vscode.recorded.messages.some((m) => m.kind === 'error' && /Start training/.test(m.message)),
    vscode.recorded.messages.map((m) => m.message).join('\n'),
  );
  const run = await until(
    () => api.services!.state.runs.find((r) => r.configPath?.endsWith('train-tiny-qwen2.rft.yaml')),
    'the run in the registry',
  );
  const seen = await until(
    async () => {
      const st = await api.services!.client.request('runs/status', { runId: run.id });
      return st.status !== 'created' ? st : undefined;
    },
    'the run running',
    120_000,
  );
  assert.notEqual(seen.status, 'failed', seen.statusReason);
  await api.services!.client.request('runs/stop', { runId: run.id }).catch(() => undefined);
  const [card] = await until(
    async () => ((await cards())[0]?.rows.Training?.includes('full') ? cards() : undefined),
    'the card names both configs',
  );
  assert.equal(card!.rows.Training, 'full fine-tuning (train-tiny-qwen2.rft.yaml); LoRA rank 8 (train.rft.yaml)');

  await vscode.commands.executeCommand('rftStudio.revealModel', node);
  assert.deepEqual(
    vscode.recorded.executed
      .filter((e) => e.command === 'revealFileInOS')
      .map((e) => (e.args[0] as { fsPath: string }).fsPath),
    [snapshot],
  );
  await vscode.commands.executeCommand('rftStudio.removeModel', node);
  await until(async () => ((await cards()).length === 0 ? true : undefined), 'the card gone');
  assert.deepEqual(
    (JSON.parse(readFileSync(join(ws, '.rft', 'models.json'), 'utf8')) as { models: unknown[] }).models,
    [],
  );
  assert.ok(existsSync(snapshot), 'the folder itself is untouched');
});

test('Export Checkpoint…: the checkpoint pick list, PEFT offered only for LoRA, GGUF F16 and PEFT written, Reveal', async () => {
  const exportVia = async (ck: string, format: RegExp) => {
    let formats: string[] = [];
    vscode.recorded.messages.length = 0;
    vscode.answers.quickPick.push(pickLabel(/Another checkpoint folder/));
    vscode.answers.openDialog.push([vscode.Uri.file(join(ws, 'ckpts', ck))]);
    vscode.answers.quickPick.push(
      (items) => ((formats = (items as { label: string }[]).map((i) => i.label)), pickLabel(format)(items)),
    );
    vscode.answers.openDialog.push([vscode.Uri.file(join(ws, 'exports'))]);
    vscode.answers.message.push('Reveal');
    const out = (await vscode.commands.executeCommand('rftStudio.exportCheckpoint')) as string | undefined;
    // The format list opened at once, busy while the checkpoint is read (issue 28: the old list stayed
    // on screen 2-4 s and Enter picked from it).
    const shown = vscode.recorded.prompts
      .filter((p) => p.kind === 'quickPick' && /: format$/.test(String(p.options.title)))
      .at(-1)!;
    assert.equal(shown.itemsPending, true);
    return { out, formats };
  };
  const full = await exportVia('full-ck', /^GGUF F16$/);
  assert.deepEqual(full.formats, ['Hugging Face folder', 'GGUF F32', 'GGUF F16']);
  assert.equal(full.out, join(ws, 'exports', 'full-ck-gguf-f16', 'model.gguf'));
  assert.equal(readFileSync(full.out!).subarray(0, 4).toString('latin1'), 'GGUF');
  assert.match(
    vscode.recorded.messages.at(-1)!.message,
    /^Exported ckpts\/full-ck as GGUF F16: exports\/full-ck-gguf-f16\/model\.gguf$/,
  );
  assert.deepEqual(vscode.recorded.messages.at(-1)!.items, ['Reveal']);
  await until(
    () =>
      vscode.recorded.executed.some(
        (e) => e.command === 'revealFileInOS' && (e.args[0] as { fsPath: string }).fsPath === full.out,
      ),
    'Reveal',
  );

  const lora = await exportVia('lora-ck', /^PEFT adapters$/);
  assert.deepEqual(lora.formats, ['Hugging Face folder', 'PEFT adapters', 'GGUF F32', 'GGUF F16']);
  const cfg = JSON.parse(readFileSync(join(ws, 'exports', 'lora-ck-peft', 'adapter_config.json'), 'utf8')) as {
    r: number;
    base_model_name_or_path: string;
  };
  assert.equal(cfg.r, 2);
  assert.equal(cfg.base_model_name_or_path, 'acme/tiny-qwen2');
  assert.ok(existsSync(join(ws, 'exports', 'lora-ck-peft', 'adapter_model.safetensors')));
});

test('Export Checkpoint… into a folder that holds files asks first (modal); Replace keeps the other files', async () => {
  const target = join(ws, 'exports', 'full-ck-hf');
  mkdirSync(target, { recursive: true });
  writeFileSync(join(target, 'notes.md'), 'mine\n');
  const exportHf = async (answer: string | undefined) => {
    vscode.recorded.messages.length = 0;
    vscode.answers.quickPick.push(pickLabel(/Another checkpoint folder/));
    vscode.answers.openDialog.push([vscode.Uri.file(join(ws, 'ckpts', 'full-ck'))]);
    vscode.answers.quickPick.push(pickLabel(/^Hugging Face folder$/));
    vscode.answers.openDialog.push([vscode.Uri.file(join(ws, 'exports'))]);
    vscode.answers.message.length = 0;
    vscode.answers.message.push(answer);
    return (await vscode.commands.executeCommand('rftStudio.exportCheckpoint')) as string | undefined;
  };
  assert.equal(await exportHf(undefined), undefined, 'dismissed: nothing exported');
  const asked = vscode.recorded.messages[0]!;
  assert.equal(asked.kind, 'warning');
  assert.equal(asked.modal, true);
  assert.equal(asked.message, 'exports/full-ck-hf already exists and holds 1 entry.');
  assert.match(
    asked.detail ?? '',
    /Replace the files this export writes \(config\.json, model\.safetensors and the tokenizer files\)\? Every other file in the folder is kept\./,
  );
  // Cancel is first and the close affordance: the default button, so Enter keeps the user's files.
  assert.deepEqual(asked.items, ['Cancel', 'Replace']);
  assert.equal(asked.closeAffordance, 'Cancel');
  assert.equal(await exportHf('Cancel'), undefined, 'Cancel: nothing exported');
  assert.deepEqual(readdirSync(target), ['notes.md']);
  assert.equal(await exportHf('Replace'), target, JSON.stringify(vscode.recorded.messages));
  assert.equal(readFileSync(join(target, 'notes.md'), 'utf8'), 'mine\n');
  assert.ok(existsSync(join(target, 'model.safetensors')));
  assert.ok(existsSync(join(target, 'config.json')));
});

test('the backend keeps exports inside the workspace and reads only existing model folders', async () => {
  const c = api.services!.client;
  await assert.rejects(
    c.request('models/export', { checkpoint: join(ws, 'ckpts', 'full-ck'), format: 'hf', out: join(root, 'outside') }),
    (e: Error & { code?: number }) => e.code === -32005 && /field 'out'.*outside the workspace/.test(e.message),
  );
  await assert.rejects(
    c.request('models/export', { checkpoint: snapshot, format: 'hf', out: join(ws, 'exports', 'x') }),
    (e: Error & { code?: number }) => e.code === -32005 && /field 'checkpoint'/.test(e.message),
  );
  await assert.rejects(
    c.request('models/info', { dir: join(root, 'nope') }),
    (e: Error & { code?: number }) => e.code === -32002 && /nope: field 'dir': no such folder/.test(e.message),
  );
  assert.ok(!existsSync(join(root, 'outside')));
});
