// The sidebar shows synthesized tasks (taskset.pipeline synthesize): the Buffer view's Taskset node
// opens on the current run's synthesized tasks grouped by origin, each naming its parent task and
// explore step; through the real extension (fake vscode) and a real `rft serve` (`buffer/synthesized`).
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
import { RunRegistry } from '../../backend/buffer/runs.js';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import type { Task } from '../../backend/core/types.js';
import type { StudioApi } from '../../src/extension.js';

let ws: string;
let ctx: ReturnType<typeof fakeContext>;
let api: StudioApi;

const task = (id: string, prompt: string, meta?: Record<string, unknown>): Task => ({
  id,
  taskset: 'builtin:arith',
  domain: 'math',
  prompt,
  answer: '1',
  ...(meta ? { metadata: meta } : {}),
});

before(async () => {
  vscode.resetFake();
  ws = workspaceDir({ 'a.txt': '' });
  const reg = await RunRegistry.open(ws);
  const run = await reg.create({ name: 'synth', config: {}, id: 'synth-run' });
  await reg.setStatus('synth-run', 'completed');
  const store = new SqliteStore(run.dbPath);
  await store.putTasks('synth-run', [
    task('arith-train-0', 'Compute 1 + 0. Put the result in <answer></answer>.'),
    task('arith-train-1', 'Compute 2 - 1. Put the result in <answer></answer>.'),
    task('arith-train-0~s0.0', 'Compute 7 + 3. Put the result in <answer></answer>.', {
      origin: 'synth:augment',
      parent: 'arith-train-0',
      synth_step: 0,
    }),
    task('arith-train-1~s2.0', 'Compute 9 - 4. Put the result in <answer></answer>.', {
      origin: 'synth:augment',
      parent: 'arith-train-1',
      synth_step: 2,
    }),
    task('arith-train-1~s3.0', 'Compute 12 / 4. Put the result in <answer></answer>.', {
      origin: 'synth:endpoint',
      parent: 'arith-train-1',
      synth_step: 3,
    }),
  ]);
  await store.close();
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

test("Buffer view: the Taskset node lists the run's synthesized tasks by origin, with parent and step", async () => {
  const view = vscode.recorded.treeViews.get('rftStudio.buffer')!;
  const p = view.provider as unknown as Provider;
  const taskset = await until(
    async () => (await p.getChildren()).find((n) => n.kind === 'taskset' && p.getTreeItem(n).description === '5'),
    "the run's buffer with its 5 tasks",
  );
  assert.equal(p.getTreeItem(taskset).collapsibleState, vscode.TreeItemCollapsibleState.Collapsed);
  const groups = await p.getChildren(taskset);
  assert.deepEqual(
    groups.map((g) => [p.getTreeItem(g).label, p.getTreeItem(g).description]),
    [
      ['synth:augment', '2'],
      ['synth:endpoint', '1'],
    ],
  );
  const augmented = await p.getChildren(groups[0]);
  assert.deepEqual(
    augmented.map((t) => [p.getTreeItem(t).label, p.getTreeItem(t).description]),
    [
      ['Compute 7 + 3. Put the result in <answer></answer>.', 'synth:augment · from arith-train-0 · step 0'],
      ['Compute 9 - 4. Put the result in <answer></answer>.', 'synth:augment · from arith-train-1 · step 2'],
    ],
  );
  assert.match(
    String(p.getTreeItem(augmented[1]!).tooltip),
    /^Compute 9 - 4\. .*\nAnswer: 1\n\narith-train-1~s2\.0: made by synth:augment from task arith-train-1 after explore step 2/,
  );
  // The request itself, as the server answers it.
  const r = await api.services!.client.request('buffer/synthesized', {
    buffer: { runId: 'synth-run' },
    runId: 'synth-run',
    limit: 1,
  });
  assert.deepEqual(r.byOrigin, { 'synth:augment': 2, 'synth:endpoint': 1 });
  assert.equal(r.total, 3);
  assert.deepEqual(
    r.tasks.map((t) => t.id),
    ['arith-train-1~s3.0'],
    'the newest, up to limit',
  );
});
