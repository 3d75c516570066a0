// A user's own files outside tasksets/ (issue 28): `{id, problem, final}` tasks with 3 broken
// records and `{problem, worked}` demonstrations, no config yet. They are found, validated with the
// mapping detected from their first records (3 real errors, not one per record), mapped into a
// config by Map Fields, fixed by the "map `final` as the answer" quick fix, and forgotten when moved.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ext, extensionDir, fakeContext, until, vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { loadTasks } from '../../backend/coordinator/setup/tasks.js';

let ctx: ReturnType<typeof fakeContext>;
let api: { services?: { diagnostics: { apply(r: unknown): void }; rereadConfigs?(): Promise<void> } };
let ws: string;
const rec = (i: number) => JSON.stringify({ id: `m-${i}`, problem: `What is ${i} + ${i}?`, final: String(2 * i) });
const MATH =
  [
    rec(1),
    rec(2),
    '{"id": "m-3", "problem": ',
    JSON.stringify({ id: 'm-4', problem: '', final: '8' }),
    rec(5),
    JSON.stringify({ id: 'm-6', problem: 'What is 6 + 6?' }),
    rec(7),
    rec(8),
  ].join('\n') + '\n';
const WORKED =
  [
    JSON.stringify({ problem: 'What is 1 + 1?', worked: 'One and one make two, so the answer is 2.' }),
    JSON.stringify({ problem: 'What is 2 + 3?', worked: 'Two and three: count up three from two, which gives 5.' }),
  ].join('\n') + '\n';

before(async () => {
  vscode.resetFake();
  ws = workspaceDir({ 'mine/math.jsonl': MATH, 'worked.jsonl': WORKED, 'package.json': '{"name": "not-a-taskset"}' });
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ws), name: 'ws', index: 0 }];
  vscode.settings.set('rftStudio.nodePath', process.execPath);
  ctx = fakeContext(extensionDir());
  api = (await ext.activate(ctx as never)) as typeof api;
});

after(async () => {
  await ext.deactivate();
  for (const d of ctx.subscriptions) d.dispose();
});

const coll = () => vscode.recorded.diagnostics.get('rft-taskset')!;
const errors = (file: string) =>
  (coll().entries.get(file) ?? []).filter((d) => d.severity === vscode.DiagnosticSeverity.Error);

test('files outside tasksets/ are listed by their content (not package.json)', async () => {
  const view = vscode.recorded.treeViews.get('rftStudio.tasksets')!;
  const items = await until(async () => ((await view.items()).length === 2 ? view.items() : undefined), 'two tasksets');
  assert.deepEqual(
    items.map((i) => i.resourceUri?.fsPath),
    [join(ws, 'mine/math.jsonl'), join(ws, 'worked.jsonl')],
  );
});

test('before a config exists, the detected mapping is assumed: the 3 real errors, a note, a badge of 3', async () => {
  const file = join(ws, 'mine/math.jsonl');
  const diags = await until(
    () => (coll().entries.get(file)?.length ? coll().entries.get(file) : undefined),
    'diagnostics of mine/math.jsonl',
  );
  const errs = errors(file);
  assert.deepEqual(
    errs.map((d) => d.range.start.line),
    [2, 3, 5],
    errs.map((d) => d.message).join('\n'),
  );
  assert.match(errs[1]!.message, /field 'problem'/, "named by the file's own field");
  assert.match(errs[2]!.message, /field 'final'/);
  const note = diags.find((d) => d.severity === vscode.DiagnosticSeverity.Information)!;
  assert.match(note.message, /problem -> prompt, final -> answer, id \(detected/);
  const worked = await until(() => coll().entries.get(join(ws, 'worked.jsonl')), 'diagnostics of worked.jsonl');
  assert.equal(
    worked.filter((d) => d.severity === vscode.DiagnosticSeverity.Error).length,
    0,
    'read as expert demonstrations',
  );
  assert.equal(vscode.recorded.treeViews.get('rftStudio.tasksets')!.badge?.value, 3);
});

test('Map Fields writes the proposed mapping into a new config that the run loads', async () => {
  vscode.answers.quickPick.push((items) =>
    (items as { label: string }[]).find((i) => i.label.startsWith('$(check) Use: problem -> prompt, final -> answer')),
  );
  const done = (await vscode.commands.executeCommand(
    'rftStudio.mapFields',
    vscode.Uri.file(join(ws, 'mine/math.jsonl')),
  )) as { config: { fsPath: string }; created: boolean };
  assert.ok(done?.created);
  const prompt = vscode.recorded.prompts.find((p) => p.kind === 'quickPick')!;
  assert.equal(prompt.options.title, 'Map fields of mine/math.jsonl');
  const cfg = parse(readFileSync(done.config.fsPath, 'utf8'));
  assert.deepEqual(cfg.taskset.format, { prompt_key: 'problem', response_key: 'final' });
  assert.equal(cfg.taskset.path, 'mine/math.jsonl');
  const pools = await loadTasks(loadRunConfig(done.config.fsPath));
  assert.deepEqual(pools.train.map((t) => [t.id, t.answer]).slice(0, 2), [
    ['m-1', '2'],
    ['m-2', '4'],
  ]);
  // Read as the config maps it now: the same 3 errors, no "detected" note.
  await until(
    () =>
      !coll()
        .entries.get(join(ws, 'mine/math.jsonl'))
        ?.some((d) => d.severity === vscode.DiagnosticSeverity.Information),
    'the note gone',
  );
  assert.equal(errors(join(ws, 'mine/math.jsonl')).length, 3);
});

test('a config without the answer mapping: did-you-mean, and the quick fix maps `final` as the answer in the config', async () => {
  const file = join(ws, 'mine/math.jsonl');
  const config = join(ws, 'train.rft.yaml');
  writeFileSync(config, readFileSync(config, 'utf8').replace(/format: \{[^}]*\}/, 'format: { prompt_key: problem }'));
  // The config watcher would re-read it; here the test fires it.
  for (const w of vscode.fileWatchers.filter((x) => x.glob === '**/*.rft.{yaml,yml}'))
    w.change.fire(vscode.Uri.file(config));
  await until(() => errors(file).length >= 5, 'the answer missing where the config does not map it');
  const ds = coll().entries.get(file)!;
  assert.ok(errors(file).length >= 5, ds.map((d) => d.message).join('\n'));
  const missing = errors(file).find((d) => d.range.start.line === 0)!;
  assert.match(
    missing.message,
    /field 'answer': required field is missing.*did you mean 'answer'\? \(a quick fix maps 'final' as the answer in the run config/,
  );
  const { TasksetQuickFixes } = await import('../../src/taskset-fixes.js');
  const doc = vscode.textDocument(vscode.Uri.file(file), readFileSync(file, 'utf8'));
  const fixes = new TasksetQuickFixes().provideCodeActions(
    doc as never,
    missing.range as never,
    { diagnostics: [missing] } as never,
  ) as unknown as { title: string; isPreferred?: boolean; command?: { command: string; arguments: unknown[] } }[];
  assert.equal(fixes[0]!.title, "Map 'final' as the answer in the run config");
  assert.ok(fixes[0]!.isPreferred);
  assert.ok(
    fixes.some((f) => f.title.startsWith("Rename 'final' to 'answer'")),
    'renaming is still offered',
  );
  await vscode.commands.executeCommand(fixes[0]!.command!.command, ...fixes[0]!.command!.arguments);
  assert.deepEqual(parse(readFileSync(config, 'utf8')).taskset.format, {
    prompt_key: 'problem',
    response_key: 'final',
  });
  await until(() => errors(file).length === 3, 'back to the 3 real errors');
  assert.equal(vscode.recorded.treeViews.get('rftStudio.tasksets')!.badge?.value, 3);
});

test('the template config reads the own files found by their records: the taskset and the worked solutions as experts (no placeholder)', async () => {
  vscode.answers.quickPick.push((items) =>
    (items as string[]).find((i) => /Create a config from the template/.test(i)),
  );
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).find((i) => i.label === 'tiny-0.4m'));
  await vscode.commands.executeCommand('rftStudio.startTraining');
  const written = join(ws, 'train-2.rft.yaml');
  const cfg = parse(readFileSync(written, 'utf8'));
  assert.equal(cfg.taskset.path, 'mine/math.jsonl');
  assert.deepEqual(cfg.taskset.format, { prompt_key: 'problem', response_key: 'final' });
  assert.deepEqual(cfg.experts, { path: 'worked.jsonl', format: { prompt_key: 'problem', response_key: 'worked' } });
  assert.equal(cfg.algorithm.name, 'mix');
  const pools = await loadTasks(loadRunConfig(written));
  assert.equal(pools.experts.length, 2);
});

test("an imported model's Start Training writes its config for the own files found by their records (not the tasksets/math.jsonl placeholder)", async () => {
  // The card's model (a folder that is not there: the config is what is checked, its start is refused).
  const model = {
    name: 'acme/qwen2-mine',
    dir: join(ws, 'models', 'qwen2-mine'),
    architecture: 'Qwen2ForCausalLM',
    parameters: 4_877_600,
    dtype: 'F32',
    layers: 2,
    hidden: 32,
    heads: 4,
    kvHeads: 2,
    vocab: 151_936,
    maxSeqLen: 512,
    tiedEmbeddings: true,
    tokenizer: null,
    chatTemplate: null,
    lora: null,
    importedAt: 0,
  };
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).find((i) => i.label.startsWith('LoRA')));
  const uri = (await vscode.commands.executeCommand('rftStudio.trainWithModel', { kind: 'model', model })) as {
    fsPath: string;
  };
  assert.equal(uri.fsPath, join(ws, 'train-qwen2-mine.rft.yaml'));
  const cfg = parse(readFileSync(uri.fsPath, 'utf8'));
  assert.equal(cfg.model.checkpoint, 'models/qwen2-mine');
  assert.equal(cfg.taskset.path, 'mine/math.jsonl');
  assert.deepEqual(cfg.taskset.format, { prompt_key: 'problem', response_key: 'final' });
  assert.deepEqual(cfg.experts, { path: 'worked.jsonl', format: { prompt_key: 'problem', response_key: 'worked' } });
  assert.equal(cfg.algorithm.name, 'mix');
});

test('a moved taskset: its Problems and badge go at once; the view lists it at its new place', async () => {
  const from = join(ws, 'mine/math.jsonl');
  const to = join(ws, 'mine/math-moved.jsonl');
  renameSync(from, to);
  const w = vscode.fileWatchers.find((x) => x.glob === '**/*.{jsonl,json,yaml,yml,csv,parquet,arrow}')!;
  w.delete.fire(vscode.Uri.file(from));
  w.create.fire(vscode.Uri.file(to));
  assert.equal(coll().entries.get(from), undefined);
  assert.equal(vscode.recorded.treeViews.get('rftStudio.tasksets')!.badge, undefined, 'the badge agrees with Problems');
  const view = vscode.recorded.treeViews.get('rftStudio.tasksets')!;
  await until(async () => (await view.items()).some((i) => i.resourceUri?.fsPath === to), 'the moved file listed');
  assert.ok(!(await view.items()).some((i) => i.resourceUri?.fsPath === from));
});

test("a file configs name, moved away and back: the configs' problem comes and goes unopened; no ENOENT ghost (issue 40 item 9)", async () => {
  const from = join(ws, 'mine/math.jsonl');
  const to = join(ws, 'mine/math-moved.jsonl');
  const configProblems = (name: string) =>
    (vscode.recorded.diagnostics.get('rft-config')?.entries.get(join(ws, name)) ?? []).map((d) => d.message);
  // The configs written above, read as the config watcher reads them; then the move's event.
  await api.services!.rereadConfigs!();
  const w = vscode.fileWatchers.find((x) => x.glob === '**/*.{jsonl,json,yaml,yml,csv,parquet,arrow}')!;
  w.delete.fire(vscode.Uri.file(from));
  // Moved by the test above: every config naming it says so, none of them opened.
  for (const name of ['train.rft.yaml', 'train-2.rft.yaml'])
    await until(
      () => configProblems(name).some((m) => m.startsWith("taskset.path: no file 'mine/math.jsonl'")),
      `${name}: the missing file`,
    );
  // A report of the gone file that raced the move (ENOENT) leaves no entry.
  api.services!.diagnostics.apply({
    file: from,
    tasks: 0,
    issues: [{ file: from, line: 1, message: `ENOENT: no such file or directory, open '${from}'`, severity: 'error' }],
  });
  assert.equal(coll().entries.get(from), undefined);
  // Back: the problem goes at once, not when Start Training checks the config again.
  renameSync(to, from);
  w.delete.fire(vscode.Uri.file(to));
  w.create.fire(vscode.Uri.file(from));
  for (const name of ['train.rft.yaml', 'train-2.rft.yaml'])
    await until(() => !configProblems(name).some((m) => m.includes('no file')), `${name}: the problem gone`);
});
