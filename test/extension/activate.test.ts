// The extension activated against the fake VS Code API with a real backend on a real SQLite
// buffer: commands, sidebar, status bar, trust, experience browser panel, export.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ext,
  extensionDir,
  fakeContext,
  PACKAGE,
  until,
  vscode,
  workspaceDir,
} from '../../tools/fake-vscode/harness.js';
import { makeBuffer } from '../../tools/make-buffer.js';
import { RunRegistry } from '../../backend/buffer/runs.js';
import type { StudioApi } from '../../src/extension.js';

let api: StudioApi;
let ctx: ReturnType<typeof fakeContext>;
let ws: string;

before(async () => {
  vscode.resetFake();
  ws = workspaceDir({
    'tasksets/math.jsonl': '{"id":"a","prompt":"1+1?","answer":"2"}\n{"id":"b","prompt":"","answer":"3"}\n',
    'train.rft.yaml': 'mode: both\n',
  });
  const buffer = await makeBuffer(30, ws);
  const reg = await RunRegistry.open(ws);
  const run = await reg.create({ name: 'demo', id: 'demo-run', config: { algorithm: 'grpo' } });
  await reg.setStatus(run.id, 'paused');
  await reg.setLastStep(run.id, 12);
  vscode.workspace.workspaceFolders = [{ uri: vscode.Uri.file(ws), name: 'ws', index: 0 }];
  vscode.settings.set('rftStudio.nodePath', process.execPath);
  vscode.settings.set('rftStudio.bufferPath', buffer);
  ctx = fakeContext(extensionDir());
  api = await ext.activate(ctx as never);
});

after(async () => {
  await ext.deactivate();
  for (const d of ctx.subscriptions) d.dispose();
});

test('every command in package.json is registered, and only those', () => {
  assert.ok(api.services, 'activated with a backend');
  const contributed = PACKAGE.contributes.commands.map((c) => c.command).sort();
  assert.deepEqual(vscode.commands.registered(), contributed);
});

test('the backend starts and the buffer view shows the counts', async () => {
  const view = vscode.recorded.treeViews.get('rftStudio.buffer')!;
  const items = await until(async () => {
    const it = await view.items();
    return it.some((i) => i.label === 'Usual experiences' && i.description === '30') ? it : undefined;
  }, 'buffer counts in the sidebar');
  assert.equal(items.find((i) => i.label === 'Expert experiences')?.description, '0');
  assert.equal(items.find((i) => i.label === 'Infra failures')?.description, '1'); // i = 16
});

test('the tasksets view lists the workspace taskset', async () => {
  const view = vscode.recorded.treeViews.get('rftStudio.tasksets')!;
  const items = await until(async () => {
    const it = await view.items();
    return it.length ? it : undefined;
  }, 'tasksets');
  assert.equal(items[0]!.resourceUri?.fsPath, join(ws, 'tasksets/math.jsonl'));
  assert.equal(items.length, 1);
});

test('a bad taskset line shows in Problems at its line, with a badge on the Tasksets view; fixing it clears both', async () => {
  const file = join(ws, 'tasksets/math.jsonl');
  const coll = vscode.recorded.diagnostics.get('rft-taskset')!;
  const diags = await until(
    () => (coll.entries.get(file)?.length ? coll.entries.get(file) : undefined),
    'diagnostics from the backend watcher',
  );
  assert.equal(diags.length, 1);
  assert.equal(diags[0]!.range.start.line, 1);
  assert.match(diags[0]!.message, /field 'prompt'/);
  const view = vscode.recorded.treeViews.get('rftStudio.tasksets')!;
  assert.equal(view.badge?.value, 1);
  const item = (await view.items())[0]!;
  assert.equal(item.description, '1 task · 1 error');

  writeFileSync(file, '{"id":"a","prompt":"1+1?","answer":"2"}\n{"id":"b","prompt":"3-1?","answer":"2"}\n');
  vscode.documentEvents.save.fire(vscode.textDocument(vscode.Uri.file(file), readFileSync(file, 'utf8')));
  await until(() => coll.entries.get(file)?.length === 0, 'diagnostics cleared');
  assert.equal(view.badge, undefined);
  assert.equal((await view.items())[0]!.description, '2 tasks');
});

test('the runs view lists the workspace runs; resume reaches the backend, whose error is shown', async () => {
  const view = vscode.recorded.treeViews.get('rftStudio.runs')!;
  const items = await until(async () => {
    const it = await view.items();
    return it.length ? it : undefined;
  }, 'runs');
  assert.equal(items[0]!.label, 'demo');
  assert.equal(items[0]!.description, 'paused · step 12');
  assert.equal(items[0]!.contextValue, 'rftRun.paused');
  vscode.recorded.messages.length = 0;
  await vscode.commands.executeCommand('rftStudio.resumeTraining', 'no-such-run');
  assert.match(vscode.recorded.messages[0]!.message, /Resume training: .*no run 'no-such-run'/);
});

test('the status bar shows the backend is up', async () => {
  const item = vscode.recorded.statusItems[0]!;
  assert.ok(item.visible);
  // The paused run is the active one: its name is shown.
  await until(() => item.text.startsWith('$(debug-pause) demo · step 12'), 'status bar text');
  assert.match(item.tooltip ?? '', /Run demo \(demo-run\): paused, step 12/);
  assert.equal(item.command, 'rftStudio.openDashboard');
});

test('untrusted workspace: start training is refused before reaching the backend', async () => {
  vscode.workspace.isTrusted = false;
  vscode.recorded.messages.length = 0;
  await vscode.commands.executeCommand('rftStudio.startTraining', vscode.Uri.file(join(ws, 'train.rft.yaml')));
  vscode.workspace.isTrusted = true;
  assert.equal(vscode.recorded.messages.length, 1);
  assert.match(vscode.recorded.messages[0]!.message, /needs a trusted workspace/);
});

test('start training with a config that is not there says so', async () => {
  vscode.recorded.messages.length = 0;
  await vscode.commands.executeCommand('rftStudio.startTraining', vscode.Uri.file(join(ws, 'missing.rft.yaml')));
  assert.equal(vscode.recorded.messages.length, 1);
  assert.equal(vscode.recorded.messages[0]!.kind, 'error');
  assert.match(vscode.recorded.messages[0]!.message, /Start training: .*not found/);
});

test('experience browser: strict CSP with nonce, no retained context, typed requests reach the buffer', async () => {
  await vscode.commands.executeCommand('rftStudio.openExperienceBrowser');
  const panel = vscode.recorded.panels.at(-1)!;
  assert.equal(panel.viewType, 'rftStudio.experienceBrowser');
  assert.equal(panel.options.enableScripts, true);
  assert.equal(panel.options.retainContextWhenHidden, undefined);
  assert.deepEqual(panel.options.localResourceRoots!.map((u) => u.fsPath).sort(), [
    join(ctx.extensionPath, 'dist/webview'),
    join(ctx.extensionPath, 'media'),
  ]);
  const html = panel.webview.html;
  const nonce = /script-src 'nonce-([A-Za-z0-9]+)'/.exec(html)?.[1];
  assert.ok(nonce && nonce.length >= 16, 'nonce in CSP');
  assert.ok(html.includes(`<script nonce="${nonce}" src="https://`));
  assert.ok(!html.includes('unsafe-inline') && !html.includes('unsafe-eval'));
  assert.match(html, /default-src 'none'/);

  panel.webview.received.fire({ kind: 'ready' });
  await until(
    () => panel.webview.posted.some((m) => (m as { method?: string }).method === 'bufferChanged'),
    'bufferChanged after ready',
  );
  // Hidden and shown again, the webview reloads and says 'ready' again: it is told its buffer at once
  // (issue 28: "no buffer open" for 31.6 s until the next change).
  const told = () =>
    panel.webview.posted.filter((m) => (m as { method?: string }).method === 'bufferChanged') as {
      params: { path?: string; counts?: unknown };
    }[];
  const n = told().length;
  panel.webview.received.fire({ kind: 'ready' });
  assert.equal(told().length, n + 1);
  assert.ok(told().at(-1)!.params.path && told().at(-1)!.params.counts, 'the path and counts, not "no buffer open"');
  panel.webview.received.fire({
    kind: 'request',
    id: 7,
    method: 'list',
    params: { filter: { source: 'usual' }, sort: 'reward', descending: true, offset: 0, limit: 5 },
  });
  const reply = (await until(
    () => panel.webview.posted.find((m) => (m as { id?: number }).id === 7),
    'list reply',
  )) as { result: { total: number; rows: { reward: number }[] } };
  assert.equal(reply.result.total, 30);
  assert.equal(reply.result.rows.length, 5);
  assert.equal(reply.result.rows[0]!.reward, 0.9);

  panel.webview.received.fire({ kind: 'request', id: 8, method: 'nope', params: {} });
  const bad = (await until(() => panel.webview.posted.find((m) => (m as { id?: number }).id === 8), 'error reply')) as {
    error: { message: string };
  };
  assert.match(bad.error.message, /unknown request 'nope'/);

  // A second open reveals the same panel and applies the filter.
  await vscode.commands.executeCommand('rftStudio.openExperienceBrowser', { source: 'expert' });
  assert.equal(vscode.recorded.panels.filter((p) => p.viewType === 'rftStudio.experienceBrowser').length, 1);
  assert.equal(panel.revealed, 1);
  assert.ok(
    panel.webview.posted.some(
      (m) => (m as { method?: string; params?: { filter?: { source?: string } } }).method === 'setFilter',
    ),
  );
  panel.dispose();
});

test('export buffer writes JSONL through the backend', async () => {
  const out = join(ws, 'export.jsonl');
  vscode.answers.saveDialog.push(vscode.Uri.file(out));
  await vscode.commands.executeCommand('rftStudio.exportBuffer');
  const lines = readFileSync(out, 'utf8').trim().split('\n');
  assert.equal(lines.length, 30);
  assert.match(vscode.recorded.messages.at(-1)!.message, /Exported 30 experiences/);
});

test('new taskset from a template writes a file the validator can read', async () => {
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).find((i) => i.label === 'Code'));
  vscode.answers.inputBox.push('tasksets/code.jsonl');
  await vscode.commands.executeCommand('rftStudio.newTaskset');
  const rows = readFileSync(join(ws, 'tasksets/code.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.equal(rows[0].domain, 'code');
  assert.equal(rows[0].entryPoint, 'add');
});

test('add selection as expert example: goes into the buffer and the sidebar count updates live', async () => {
  const doc = vscode.textDocument(vscode.Uri.file(join(ws, 'notes.md')), 'intro\nthe answer is 42\n');
  vscode.window.activeTextEditor = { document: doc, selection: new vscode.Selection(1, 0, 1, 16) };
  // A task of the buffer, picked: its prompt comes from the buffer.
  vscode.answers.quickPick.push((items) => (items as { label: string }[]).find((i) => i.label === 't1'));
  vscode.recorded.messages.length = 0;
  await vscode.commands.executeCommand('rftStudio.addSelectionAsExpert');
  assert.match(vscode.recorded.messages[0]!.message, /Added expert example expert~t1~[0-9a-f]{8} for task t1/);
  const view = vscode.recorded.treeViews.get('rftStudio.buffer')!;
  await until(
    async () => (await view.items()).some((i) => i.label === 'Expert experiences' && i.description === '1'),
    'expert count 1',
  );
});

test('a window reload restores the dashboard (its run), the browser (its buffer) and a report tab (its run)', async () => {
  const s = api.services!;
  for (const t of ['rftStudio.dashboard', 'rftStudio.experienceBrowser', 'rftStudio.report'])
    assert.ok(PACKAGE.activationEvents.includes(`onWebviewPanel:${t}`), `activated to restore ${t}`);
  const restore = async (viewType: string, title: string, state: unknown) => {
    const panel = vscode.FakeWebviewPanel.restored(viewType, title);
    await vscode.recorded.serializers.get(viewType)!.deserializeWebviewPanel(panel, state);
    return panel;
  };
  // The dashboard: its script again, and the run it showed selected once it is ready.
  const dash = await restore('rftStudio.dashboard', 'RFT Dashboard', { runId: 'demo-run' });
  assert.match(dash.webview.html, /dashboard\.js/);
  assert.equal((dash.webview.options as { enableScripts?: boolean }).enableScripts, true);
  dash.webview.received.fire({ kind: 'ready' });
  await until(
    () =>
      dash.webview.posted.some(
        (m) => (m as { method?: string; params?: { runId?: string } }).params?.runId === 'demo-run',
      ),
    'the restored dashboard selects its run',
  );
  dash.dispose();
  // The browser: told its buffer at once.
  const browser = await restore('rftStudio.experienceBrowser', 'Experiences', { bufferPath: s.state.bufferPath });
  assert.match(browser.webview.html, /experience-browser\.js/);
  browser.webview.received.fire({ kind: 'ready' });
  await until(
    () =>
      browser.webview.posted.some(
        (m) => (m as { method?: string; params?: { path?: string } }).params?.path === s.state.bufferPath,
      ),
    'the restored browser is told its buffer',
  );
  browser.dispose();
  // A report tab: the run remembered for its title when it was opened.
  const run = (await RunRegistry.open(ws).then((r) => r.get('demo-run')))!;
  writeFileSync(join(run.dir, 'report.html'), '<html><head></head><body>demo report</body></html>');
  const opened = (await vscode.commands.executeCommand('rftStudio.openReport', 'demo-run')) as { title: string };
  assert.equal(opened.title, 'Report: demo');
  const report = await restore('rftStudio.report', 'Report: demo', undefined);
  assert.match(report.webview.html, /demo report/);
  assert.equal(report.disposed, false);
});

test("rftStudio.engine changed: Restart Backend passes it (RFT_BACKEND) and the status bar follows; Dawn's warnings are its reason, not [error] lines", async () => {
  const s = api.services!;
  await until(() => s.state.engine, 'the engine of the first backend');
  assert.equal(s.state.engine!.requested, 'auto');
  vscode.recorded.messages.length = 0;
  vscode.answers.message.push('Restart Backend');
  vscode.changeSetting('rftStudio.engine', 'webgpu');
  const asked = await until(
    () => vscode.recorded.messages.find((m) => m.message.startsWith("rftStudio.engine is now 'webgpu'")),
    'the offer to restart',
  );
  assert.deepEqual(asked.items, ['Restart Backend']);
  // The restarted backend has RFT_BACKEND=webgpu (the setting as it is now, not as at activation).
  await until(() => s.state.engine?.requested === 'webgpu', 'the restarted backend reports webgpu', 60_000);
  const item = vscode.recorded.statusItems[0]!;
  const e = s.state.engine!;
  assert.equal(e.engine, 'webgpu');
  // A GPU, an emulated one, or none with the reason: the status bar says which.
  await until(() => / · (GPU|GPU \(emulated\)|\$\(warning\) no GPU)$/.test(item.text), 'the engine in the status bar');
  assert.match(item.tooltip ?? '', /Engine: webgpu \(rftStudio\.engine \/ RFT_BACKEND: webgpu\)/);
  if (!e.ok) {
    assert.match(item.text, /no GPU$/);
    assert.match(e.detail, /Dawn found no GPU adapter/);
    // What Dawn printed while probing is in the tooltip (its own reason), never as an [error] line.
    if (s.state.dawnSaid.length) assert.match(item.tooltip ?? '', /\nDawn: /);
  }
  assert.deepEqual(
    vscode.recorded.log.filter((l) => l.level === 'error' && /Warning: /.test(l.line)),
    [],
    "Dawn's warnings are not errors",
  );
});
