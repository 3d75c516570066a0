// Curation seen at work (issue 28 item 6): an expert added from the editor shows, in the sidebar's
// Expert node and the browser's rows, how many times the trainer's expert sampler took it. Real
// backend, real SQLite buffer, the real ExpertSampler taking batches as MIX's SFT part does.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import {
  activateWith,
  deactivateFrom,
  type fakeContext,
  until,
  vscode,
  workspaceDir,
} from '../../tools/fake-vscode/harness.js';
import { makeBuffer } from '../../tools/make-buffer.js';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { ExpertSampler } from '../../backend/buffer/sampler/expert.js';
import type { StudioApi } from '../../src/extension.js';

let ws: string;
let ctx: ReturnType<typeof fakeContext>;
let api: StudioApi;
let dbPath: string;

before(async () => {
  vscode.resetFake();
  ws = workspaceDir({ 'a.txt': '' });
  // A buffer of run-a / run-b with their character tokenizer beside it.
  dbPath = await makeBuffer(4, ws);
  ({ ctx, api } = await activateWith(ws));
});

after(async () => {
  await deactivateFrom(ctx);
  rmSync(ws, { recursive: true, force: true });
});

type Node = { kind: string; label: string };
type Provider = {
  getChildren(n?: Node): Node[] | Promise<Node[]>;
  getTreeItem(n: Node): { label?: string; description?: string; tooltip?: string; collapsibleState?: number };
};

test('the sidebar lists each expert with the number of times the trainer used it', async () => {
  const c = api.services!.client;
  await api.services!.state.openBuffer({ path: dbPath });
  await c.request('feedback/addExpert', {
    buffer: { path: dbPath },
    taskId: 'm-1',
    prompt: 'question 1',
    response: 'the answer 42',
    runId: 'run-a',
  });
  await c.request('feedback/addExpert', {
    buffer: { path: dbPath },
    taskId: 'm-2',
    prompt: 'question 2',
    response: 'the answer 72',
    runId: 'run-a',
  });
  // The trainer's expert sampler: 3 steps of one expert each, least-used first (a, b, a).
  const store = new SqliteStore(dbPath);
  const sampler = new ExpertSampler(store, { type: 'expert' });
  for (let step = 0; step < 3; step++) await sampler.sample({ batchSize: 1, step, currentVersion: step } as never);
  await store.close();
  await api.services!.state.refreshCounts();

  const view = vscode.recorded.treeViews.get('rftStudio.buffer')!;
  const p = view.provider as unknown as Provider;
  const expertNode = await until(
    async () => (await p.getChildren()).find((n) => n.kind === 'expert' && p.getTreeItem(n).description === '2'),
    'two experts',
  );
  assert.equal(p.getTreeItem(expertNode).collapsibleState, vscode.TreeItemCollapsibleState.Collapsed);
  const items = (await p.getChildren(expertNode)).map((n) => p.getTreeItem(n));
  const byTask = Object.fromEntries(items.map((i) => [String(i.description).split(' · ')[1], i]));
  assert.equal(byTask['m-1']!.description, 'used 2× · m-1');
  assert.equal(byTask['m-2']!.description, 'used 1× · m-2');
  assert.match(String(byTask['m-1']!.tooltip), /used by the trainer 2 times/);
  // The browser's rows carry the same count.
  const rows = await c.request('buffer/list', {
    buffer: { path: dbPath },
    filter: { source: 'expert' },
    offset: 0,
    limit: 10,
  });
  assert.deepEqual(rows.rows.map((r) => [r.taskId, r.useCount]).sort(), [
    ['m-1', 2],
    ['m-2', 1],
  ]);
});

test("Add Selection as Expert: a pick list of the buffer's tasks; an existing task's prompt is not asked again", async () => {
  const c = api.services!.client;
  const doc = vscode.textDocument(vscode.Uri.file(`${ws}/notes.md`), 'the answer 3\n');
  vscode.window.activeTextEditor = { document: doc, selection: new vscode.Selection(0, 0, 0, 12) };
  let offered: { label: string; description?: string; detail?: string }[] = [];
  vscode.answers.quickPick.push(
    (items) => ((offered = items as never), (items as { label: string }[]).find((i) => i.label === 't3')),
  );
  const before = vscode.recorded.prompts.length;
  await vscode.commands.executeCommand('rftStudio.addSelectionAsExpert');
  const shown = vscode.recorded.prompts.slice(before);
  assert.deepEqual(
    shown.map((p) => p.kind),
    ['quickPick'],
    'no input box: neither the id nor the prompt is typed',
  );
  // The buffer's tasks (the experts of the first test are tasks m-1 and m-2), then a new one.
  assert.deepEqual(
    offered.map((i) => i.label),
    ['m-1', 'm-2', 't0', 't1', 't2', 't3', '$(add) A new task…'],
  );
  assert.equal(offered[5]!.detail, 'question 3');
  const rows = await c.request('buffer/list', {
    buffer: { path: dbPath },
    filter: { source: 'expert', taskId: 't3' },
    offset: 0,
    limit: 5,
  });
  assert.equal(rows.total, 1);
  const added = await c.request('buffer/get', { buffer: { path: dbPath }, id: rows.rows[0]!.id });
  assert.equal(added!.promptText, 'question 3', "the task's own prompt");
  assert.equal(added!.responseText, 'the answer 3');
  assert.match(vscode.recorded.messages.at(-1)!.message, /^Added expert example .* for task t3\./);
  vscode.window.activeTextEditor = undefined;
});

test('Add Selection as Expert for a new task asks its id and prompt; an existing id typed is sent back to the list', async () => {
  const doc = vscode.textDocument(vscode.Uri.file(`${ws}/notes.md`), 'the answer 9\n');
  vscode.window.activeTextEditor = { document: doc, selection: new vscode.Selection(0, 0, 0, 12) };
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).at(-1));
  vscode.answers.inputBox.push('t9', 'question 9');
  await vscode.commands.executeCommand('rftStudio.addSelectionAsExpert');
  const idBox = vscode.recorded.prompts.filter((p) => p.kind === 'inputBox').at(-2)!.options as {
    validateInput(v: string): string | undefined;
  };
  assert.match(idBox.validateInput('t1')!, /t1 is a task of the buffer: pick it from the list/);
  const rows = await api.services!.client.request('buffer/list', {
    buffer: { path: dbPath },
    filter: { source: 'expert', taskId: 't9' },
    offset: 0,
    limit: 5,
  });
  assert.equal(rows.rows[0]?.promptPreview, 'question 9');
  vscode.window.activeTextEditor = undefined;
});
