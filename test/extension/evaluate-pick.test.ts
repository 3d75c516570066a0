// Evaluate Checkpoint… offers each run's checkpoints (newest first, step and accuracy) instead of a
// folder dialog, and the result names the checkpoint; palette prompts survive a focused webview
// (ignoreFocusOut) and dialogs start in the workspace.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { vscode, workspaceDir } from '../../tools/fake-vscode/harness.js';
import type { MetricsPoint, RunInfo } from '../../backend/core/protocol.js';

const { checkpointItems, accuracyBySteps, evalResultLine } = await import('../../src/commands/checkpoint-picks.js');
const { evaluateCheckpoint, startTraining, stopTraining } = await import('../../src/commands/training.js');
const { openBuffer, exportBuffer, addSelectionAsExpert } = await import('../../src/commands/buffer.js');
const { newTaskset } = await import('../../src/commands/taskset.js');

const ck = (version: number, step = version) => ({ version, step, path: `/w/.rft/runs/r/checkpoints/v${version}` });
const RUNS: RunInfo[] = [
  { id: 'old', name: 'first try', status: 'completed', createdAt: 1, checkpoints: [ck(0)] },
  { id: 'r2', name: 'tiny', status: 'running', createdAt: 2, checkpoints: [ck(20), ck(100), ck(0), ck(60)] },
  { id: 'none', status: 'failed', createdAt: 3, checkpoints: [] },
];
const POINTS: MetricsPoint[] = [
  { runId: 'r2', step: 0, at: 0, values: { eval_accuracy: 0.1 } },
  { runId: 'r2', step: 20, at: 0, values: { reward: 0.3 } },
  { runId: 'r2', step: 60, at: 0, values: { eval_accuracy: 0.375, reward: 0.4 } },
  { runId: 'r2', step: 100, at: 0, values: { eval_accuracy: 0.5 } },
];

test('checkpoint items: newest run first, checkpoints by version descending (v100 before v20), step and accuracy', () => {
  const items = checkpointItems(RUNS, new Map([['r2', accuracyBySteps(POINTS)]]));
  assert.deepEqual(
    items.map((i) => (i.separator ? `-- ${i.label}` : `${i.label} | ${i.description}`)),
    [
      '-- tiny · running · #r2',
      'v100 | step 100 · accuracy 50.0%',
      'v60 | step 60 · accuracy 37.5%',
      'v20 | step 20 · not evaluated',
      'v0 | step 0 · accuracy 10.0%',
      '-- first try · completed · #old',
      'v0 | step 0 · not evaluated',
    ],
  );
  assert.equal(items[1]!.runId, 'r2');
  assert.equal(
    evalResultLine(items[2]! as never, { accuracy: 0.4, tasks: 16 }, 'the held-out split'),
    'v60 of tiny (step 60): accuracy 40.0% on 16 tasks of the held-out split',
  );
  assert.equal(
    evalResultLine({ path: '/x/ck' }, { accuracy: 1, tasks: 2 }, 'a.jsonl'),
    '/x/ck: accuracy 100.0% on 2 tasks of a.jsonl',
  );
});

function services() {
  const requests: { method: string; params: unknown }[] = [];
  const lines: string[] = [];
  const state = {
    runs: [] as RunInfo[],
    bufferPath: '/w/.rft/runs/r2/buffer.db' as string | undefined,
    async refreshRuns() {
      state.runs = RUNS;
    },
    async openBuffer() {},
  };
  const client = {
    async request(method: string, params: { runId?: string }) {
      requests.push({ method, params });
      if (method === 'runs/metrics') return POINTS.filter((p) => p.runId === params.runId);
      if (method === 'runs/evaluate') return { accuracy: 0.4375, tasks: 16 };
      if (method === 'runs/list') return RUNS;
      if (method === 'feedback/addExpert') return { expertId: 'e1', changeId: 'c1' };
      throw new Error(`unexpected ${method}`);
    },
  };
  const output = {
    info: (l: string) => lines.push(l),
    warn: (l: string) => lines.push(l),
    error: (l: string) => lines.push(l),
    show() {},
  };
  return { s: { client, state, output, configs: { checkFile: async () => [] } } as never, requests, lines };
}

test("Evaluate Checkpoint…: a pick list of the runs' checkpoints; the evaluation names the checkpoint", async () => {
  vscode.resetFake();
  const { s, requests, lines } = services();
  let shown: { label: string; kind?: number; description?: string }[] = [];
  vscode.answers.quickPick.push((items) => ((shown = items as typeof shown), shown.find((i) => i.label === 'v60')));
  vscode.answers.quickPick.push((items) => (items as string[])[0]);
  await evaluateCheckpoint(s);
  const labels = shown.map((i) => (i.kind === vscode.QuickPickItemKind.Separator ? `-- ${i.label}` : i.label));
  assert.deepEqual(labels, [
    '-- tiny · running · #r2',
    'v100',
    'v60',
    'v20',
    'v0',
    '-- first try · completed · #old',
    'v0',
    '-- ',
    '$(folder-opened) Another checkpoint folder…',
  ]);
  assert.equal(shown[2]!.description, 'step 60 · accuracy 37.5%');
  const ev = requests.find((r) => r.method === 'runs/evaluate')!;
  assert.deepEqual(ev.params, { checkpoint: '/w/.rft/runs/r/checkpoints/v60', taskset: '', runId: 'r2' });
  assert.deepEqual(
    vscode.recorded.messages.map((m) => m.message),
    ['Evaluated v60 of tiny (step 60): accuracy 43.8% on 16 tasks of the held-out split.'],
  );
  assert.ok(lines.includes('Evaluated v60 of tiny (step 60): accuracy 43.8% on 16 tasks of the held-out split'));
  assert.equal(vscode.recorded.prompts.filter((p) => p.kind === 'openDialog').length, 0, 'no folder dialog');

  // "Another checkpoint folder…" still opens a dialog, starting in the workspace.
  vscode.resetFake();
  const ws = workspaceDir({ 'a.txt': '' });
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ws), name: 'ws', index: 0 }];
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).at(-1));
  vscode.answers.openDialog.push(undefined);
  await evaluateCheckpoint(s);
  const dialog = vscode.recorded.prompts.find((p) => p.kind === 'openDialog')!;
  assert.equal((dialog.options.defaultUri as { fsPath: string }).fsPath, ws);
});

test('prompts from the palette keep open when a webview or the walkthrough has focus (ignoreFocusOut)', async () => {
  vscode.resetFake();
  const { s } = services();
  const ws = workspaceDir({ 'train.rft.yaml': 'x: 1\n' });
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ws), name: 'ws', index: 0 }];
  (s as { state: { runs: RunInfo[] } }).state.runs = RUNS;
  // Each prompt is dismissed: only its options matter here.
  await newTaskset(s);
  await openBuffer(s);
  await startTraining(s);
  await stopTraining(s);
  await evaluateCheckpoint(s);
  vscode.window.activeTextEditor = {
    document: vscode.textDocument(vscode.Uri.file(`${ws}/a.txt`), 'the answer is 4'),
    selection: new vscode.Selection(0, 0, 0, 15),
  } as never;
  await addSelectionAsExpert(s);
  const prompts = vscode.recorded.prompts.filter((p) => p.kind === 'quickPick' || p.kind === 'inputBox');
  assert.deepEqual(
    prompts.map((p) => p.options.title),
    [
      'New taskset: domain',
      'Open buffer',
      'Start training: config',
      'Run',
      'Evaluate checkpoint',
      'Expert example: which task does the selection answer?',
    ],
  );
  for (const p of prompts) assert.equal(p.options.ignoreFocusOut, true, `${String(p.options.title)} keeps open`);
  // Export starts in the workspace, named after the buffer (not in the active file's folder).
  vscode.answers.saveDialog.push(undefined);
  await exportBuffer(s);
  const save = vscode.recorded.prompts.find((p) => p.kind === 'saveDialog')!;
  assert.equal((save.options.defaultUri as { fsPath: string }).fsPath, `${ws}/buffer.jsonl`);
});

test("Evaluate on a CSV no config names: its own mapping goes with the request, not the run's (issue 40 item 4)", async () => {
  vscode.resetFake();
  const { s, requests } = services();
  const ws = workspaceDir({
    'tasksets/held.csv': 'question,answer\nWhat is 2 + 2?,4\nWhat is 3 + 3?,6\n',
    'tasksets/train.jsonl': '{"input": "What is 1 + 1?", "label": "2"}\n',
    'train.rft.yaml': 'taskset:\n  path: tasksets/train.jsonl\n  format: { prompt_key: input, response_key: label }\n',
  });
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ws), name: 'ws', index: 0 }];
  let targets: { label: string; description?: string }[] = [];
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).find((i) => i.label === 'v60'));
  vscode.answers.quickPick.push(
    (items) => ((targets = items as typeof targets), targets.find((i) => i.label === 'tasksets/held.csv')),
  );
  await evaluateCheckpoint(s);
  const ev = requests.find((r) => r.method === 'runs/evaluate')!;
  assert.deepEqual(ev.params, {
    checkpoint: '/w/.rft/runs/r/checkpoints/v60',
    taskset: `${ws}/tasksets/held.csv`,
    runId: 'r2',
    format: { prompt_key: 'question' },
  });
  // The file the config names is read as it maps it (no format of its own sent).
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).find((i) => i.label === 'v60'));
  vscode.answers.quickPick.push(
    (items) => ((targets = items as typeof targets), targets.find((i) => i.label === 'tasksets/train.jsonl')),
  );
  await evaluateCheckpoint(s);
  const named = requests.filter((r) => r.method === 'runs/evaluate').at(-1)!;
  assert.equal((named.params as { format?: unknown }).format, undefined);
  assert.equal(targets.find((i) => i.label === 'tasksets/train.jsonl')!.description, 'read as train.rft.yaml reads it');
});
