// The taskset CodeLens: task ids found per line in each format, the pass rate of the current run
// from a real `rft serve` (buffer/taskStats on a real SQLite run buffer), refreshed on run/metrics.
import '../../tools/fake-vscode/setup.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunRegistry } from '../../backend/buffer/runs.js';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import type { RunInfo } from '../../backend/core/protocol.js';
import { experience } from '../../tools/make-buffer.js';
import { spawnServe } from '../../tools/spawn-serve.js';

const vscode = await import('../../tools/fake-vscode/fake-vscode.js');
const { taskIdLines, lensTitle, currentRun, TaskPassRateLens } = await import('../../src/taskset-lens.js');

test('task ids per line: JSONL, JSON, YAML, CSV', () => {
  assert.deepEqual(taskIdLines('{"id":"a","prompt":"x"}\n\nnot json\n{"id":7}\n', 't.jsonl'), [
    { line: 0, id: 'a' },
    { line: 3, id: '7' },
  ]);
  assert.deepEqual(taskIdLines('[\n  {\n    "id": "a",\n    "prompt": "x"\n  },\n  { "id": "b" }\n]', 't.json'), [
    { line: 2, id: 'a' },
    { line: 5, id: 'b' },
  ]);
  assert.deepEqual(taskIdLines('- id: a\n  prompt: x\n- id: "b c"  # note\n  prompt: y\n', 't.yaml'), [
    { line: 0, id: 'a' },
    { line: 2, id: 'b c' },
  ]);
  assert.deepEqual(taskIdLines('prompt,id,answer\n"a, b",x1,2\nq,x2,3\n', 't.csv'), [
    { line: 1, id: 'x1' },
    { line: 2, id: 'x2' },
  ]);
  assert.equal(
    lensTitle({ taskId: 'a', rollouts: 8, meanReward: 0.4125, passRate: 0.375 }),
    '$(pass) 3/8 passed (38%) · mean reward 0.41',
  );
  const r = (id: string, status: RunInfo['status'], updatedAt: number): RunInfo => ({ id, status, updatedAt });
  assert.equal(currentRun([r('old', 'completed', 1), r('new', 'stopped', 3), r('live', 'running', 2)])!.id, 'live');
  assert.equal(currentRun([r('old', 'completed', 1), r('new', 'stopped', 3)])!.id, 'new');
  assert.equal(currentRun([]), undefined);
});

test('lenses show the current run pass rate from the backend, and follow run/metrics', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-lens-'));
  const reg = await RunRegistry.open(ws);
  const run = await reg.create({ name: 'lens', config: {} });
  await reg.setStatus(run.id, 'running');
  const store = new SqliteStore(run.dbPath);
  const mk = (i: number, taskId: string, reward: number) => experience(i, { runId: run.id, taskId, reward });
  await store.appendExperiences([mk(0, 'a', 1), mk(1, 'a', 0), mk(2, 'a', 1), mk(3, 'b', 0.5)]);
  const s = spawnServe(['--workspace', ws]);
  const listeners = new Map<string, (p: unknown) => void>();
  // The BackendClient surface the lens uses, over the real server.
  const client = {
    capabilities: { buffer: true },
    request: s.request,
    onNotification: (m: string, cb: (p: unknown) => void) => (
      listeners.set(m, cb), { dispose: () => listeners.delete(m) }
    ),
  };
  const runs = await s.request('runs/list', {});
  const stateEmitter = new vscode.EventEmitter<'runs' | 'buffer'>();
  const state = { runs, onDidChange: stateEmitter.event };
  const lens = new TaskPassRateLens(client as never, state as never, 50);
  try {
    const doc = vscode.textDocument(
      vscode.Uri.file(join(ws, 'tasksets', 'math.jsonl')),
      '{"id":"a"}\n{"id":"b"}\n{"id":"c"}\n',
    );
    assert.deepEqual(lens.provideCodeLenses(doc as never), [], 'nothing before the first fetch');
    let changed = 0;
    lens.onDidChangeCodeLenses(() => changed++);
    await lens.refresh();
    const lenses = lens.provideCodeLenses(doc as never) as unknown as InstanceType<typeof vscode.CodeLens>[];
    assert.deepEqual(
      lenses.map((l) => [l.range.start.line, l.command!.title]),
      [
        [0, '$(pass) 2/3 passed (67%) · mean reward 0.67'],
        [1, '$(pass) 0/1 passed (0%) · mean reward 0.50'],
      ],
    );
    assert.deepEqual(lenses[0]!.command!.arguments, [{ taskId: 'a' }]);
    assert.equal(changed, 1);
    // Not a taskset file: no lenses.
    assert.deepEqual(
      lens.provideCodeLenses(vscode.textDocument(vscode.Uri.file(join(ws, 'package.json')), '{"id":"a"}') as never),
      [],
    );

    // New rollouts + a metrics notification of the run: the lenses refresh (throttled).
    await store.appendExperiences([mk(4, 'b', 1)]);
    listeners.get('run/metrics')!({ runId: run.id, step: 3, at: 0, values: {} });
    const deadline = Date.now() + 10_000;
    while (changed < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(
      (lens.provideCodeLenses(doc as never) as unknown as InstanceType<typeof vscode.CodeLens>[])[1]!.command!.title,
      '$(pass) 1/2 passed (50%) · mean reward 0.75',
    );

    // A taskset of the user's own outside tasksets/ (found by its records) gets its pass rates too.
    const { TasksetReadings } = await import('../../src/taskset-readings.js');
    const readings = new TasksetReadings();
    const own = join(ws, 'mine', 'math.jsonl');
    mkdirSync(join(ws, 'mine'), { recursive: true });
    const text = [
      '{"id":"a","problem":"What is 1 + 1?","final":"2"}',
      '{"id":"b","problem":"What is 2 + 2?","final":"4"}',
      '',
    ].join('\n');
    writeFileSync(own, text);
    const lens2 = new TaskPassRateLens(client as never, state as never, 50, (f) => readings.isTaskset(f));
    try {
      await lens2.refresh();
      const ownLenses = lens2.provideCodeLenses(
        vscode.textDocument(vscode.Uri.file(own), text) as never,
      ) as unknown as InstanceType<typeof vscode.CodeLens>[];
      assert.deepEqual(
        ownLenses.map((l) => l.range.start.line),
        [0, 1],
      );
      assert.deepEqual(
        lens.provideCodeLenses(vscode.textDocument(vscode.Uri.file(own), text) as never),
        [],
        'by folder alone it was not a taskset',
      );
    } finally {
      lens2.dispose();
    }
  } finally {
    lens.dispose();
    await store.close();
    await s.close();
  }
});
