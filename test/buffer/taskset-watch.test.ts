// The watcher on a real temp file: initial load, an edit (add / change / remove), a bad line, delete.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { watchTaskset, type TasksetChange } from '../../backend/buffer/taskset/watch.js';
import { tempDir } from './taskset-helpers.js';

const rec = (id: string, prompt: string, answer = '1') => JSON.stringify({ id, prompt, answer });

/** Events in arrival order; `nextEvent` waits for the next one with a timeout (no fixed sleeps). */
function eventQueue() {
  const got: TasksetChange[] = [];
  const waiters: ((c: TasksetChange) => void)[] = [];
  return {
    push(c: TasksetChange) {
      const w = waiters.shift();
      if (w) w(c);
      else got.push(c);
    },
    next(timeoutMs = 10_000): Promise<TasksetChange> {
      const c = got.shift();
      if (c) return Promise.resolve(c);
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error('no taskset event within timeout')), timeoutMs);
        waiters.push((x) => {
          clearTimeout(t);
          resolve(x);
        });
      });
    },
    pending: () => got.length,
  };
}

test('watchTaskset: added / changed / removed by id, errors of the new version, unlink', async () => {
  const dir = tempDir();
  const file = join(dir, 'tasks.jsonl');
  writeFileSync(file, [rec('a', 'p1'), rec('b', 'p2'), rec('c', 'p3')].join('\n') + '\n');
  const q = eventQueue();
  const w = watchTaskset(file, (c) => q.push(c), { stableMs: 50 });
  try {
    await w.ready;
    const first = await q.next();
    assert.equal(first.kind, 'load');
    assert.deepEqual(
      first.added.map((t) => t.id),
      ['a', 'b', 'c'],
    );
    assert.equal(w.tasks().length, 3);

    // Edit: change b, remove c, add d, and one bad line.
    writeFileSync(
      file,
      [rec('a', 'p1'), rec('b', 'p2 edited'), rec('d', 'p4'), '{"id": "e", "prompt": ""}'].join('\n') + '\n',
    );
    const edit = await q.next();
    assert.equal(edit.kind, 'change');
    assert.deepEqual(
      edit.added.map((t) => t.id),
      ['d'],
    );
    assert.deepEqual(
      edit.changed.map((t) => [t.id, t.prompt]),
      [['b', 'p2 edited']],
    );
    assert.deepEqual(edit.removed, ['c']);
    assert.deepEqual(
      edit.errors.map((e) => [e.line, e.field]),
      [[4, 'prompt']],
    );
    assert.deepEqual(
      w.tasks().map((t) => t.id),
      ['a', 'b', 'd'],
    );

    rmSync(file);
    const gone = await q.next();
    assert.equal(gone.kind, 'unlink');
    assert.deepEqual(gone.removed.sort(), ['a', 'b', 'd']);
    assert.equal(w.tasks().length, 0);
  } finally {
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('watchTaskset on a folder: a new taskset file appears as added tasks', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'notes.txt'), 'not a taskset');
  const q = eventQueue();
  const w = watchTaskset(dir, (c) => q.push(c), { stableMs: 50 });
  try {
    await w.ready;
    assert.equal(q.pending(), 0, 'no taskset files yet');
    writeFileSync(join(dir, 'more.yaml'), '- {id: y1, prompt: hi, answer: 1}\n- {id: y2, prompt: ho, answer: 2}\n');
    const c = await q.next();
    assert.equal(c.file, join(dir, 'more.yaml'));
    assert.deepEqual(
      c.added.map((t) => t.id),
      ['y1', 'y2'],
    );
  } finally {
    await w.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
