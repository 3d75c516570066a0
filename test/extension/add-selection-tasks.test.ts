// Issue 40 item 12: Add Selection as Expert Example lists every task of the run's taskset (those
// without rollouts too, from the buffer's `buffer/tasks`), and the expert it adds is named by its
// task and a short hash, not a bare UUID.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { vscode } from '../../tools/fake-vscode/harness.js';
import { SqliteStore } from '../../backend/buffer/storage/index.js';
import { StoreBuffer } from '../../backend/server/adapters/store-buffer.js';
import { FeedbackService } from '../../backend/buffer/feedback.js';
import type { RunInfo } from '../../backend/core/protocol.js';

const { pickExpertTask } = await import('../../src/commands/buffer.js');

test("the buffer's tasks of a run: its taskset in order, with the prompt of each", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-tasks-'));
  const store = new SqliteStore(join(dir, 'buffer.db'));
  try {
    await store.putTasks('r1', [
      { id: 'q1', taskset: 'math.jsonl', domain: 'math', prompt: 'What is 1+1?', answer: '2' },
      { id: 'q2', taskset: 'math.jsonl', domain: 'math', prompt: 'What is 2+2?', answer: '4' },
    ]);
    const b = new StoreBuffer(store, join(dir, 'buffer.db'), undefined, false);
    assert.deepEqual(await b.tasks('r1', 10), {
      total: 2,
      tasks: [
        { id: 'q1', prompt: 'What is 1+1?' },
        { id: 'q2', prompt: 'What is 2+2?' },
      ],
    });
    assert.deepEqual((await b.tasks('r1', 1)).tasks.length, 1);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Add Selection: a taskset task without rollouts is offered and takes its prompt from the taskset', async () => {
  vscode.resetFake();
  const run: RunInfo = { id: 'r1', name: 'tiny', status: 'running', bufferPath: '/w/buffer.db', createdAt: 1 };
  const client = {
    async request(method: string) {
      if (method === 'buffer/taskStats') return [{ taskId: 'q1', rollouts: 8, meanReward: 0.5, passRate: 0.5 }];
      if (method === 'buffer/list')
        return { total: 1, rows: [{ id: 'e1', taskId: 'q1', promptPreview: 'What is 1+1?' }] };
      if (method === 'buffer/tasks')
        return {
          total: 2,
          tasks: [
            { id: 'q1', prompt: 'What is 1+1?' },
            { id: 'q2', prompt: 'What is 2+2? Answer with a number.' },
          ],
        };
      throw new Error(`unexpected ${method}`);
    },
  };
  const s = { client, state: { runs: [run], activeRun: run } } as never;
  let shown: { label: string; description?: string }[] = [];
  vscode.answers.quickPick.push((items) => {
    shown = items as typeof shown;
    return shown.find((i) => i.label === 'q2');
  });
  const picked = await pickExpertTask(s, '/w/buffer.db');
  assert.deepEqual(
    shown.filter((i) => i.label.startsWith('q')).map((i) => [i.label, i.description]),
    [
      ['q1', 'pass 50% · 8 rollouts'],
      ['q2', 'no rollouts yet'],
    ],
  );
  assert.deepEqual(picked, { taskId: 'q2', prompt: 'What is 2+2? Answer with a number.', runId: 'r1' });
});

test('an added expert is named by its task and a short hash', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-expert-id-'));
  const store = new SqliteStore(join(dir, 'buffer.db'));
  try {
    const chars = (t: string) => [...t].map((c) => c.charCodeAt(0));
    const ex = { runId: 'r1', taskId: 'q2', prompt: 'What is 2+2?', response: '4' };
    const { expert } = await new FeedbackService(store).addExpert(ex, chars, 'me');
    assert.match(expert.id, /^expert~q2~[0-9a-f]{8}$/);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
