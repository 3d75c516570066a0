// Run configs are parsed off the server's main thread (issue 40, item 21): 20k aliases through
// `rft serve` blocked every client for 7 s, a 30 MB config for 15.6 s. config/validate now parses in
// a worker thread (backend/server/config-check/thread.ts); a check past its deadline ends that thread
// and is answered, and the next check gets a new thread.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigThread } from '../../backend/server/config-check/thread.js';

const threads: ConfigThread[] = [];
after(() => Promise.all(threads.map((t) => t.stop())));

test('a config is checked in the thread, with its issues at their lines', async () => {
  const t = new ConfigThread();
  threads.push(t);
  const r = await t.check('name: x\nseed: 1\nseed: 2\n', '/w/c.rft.yaml');
  assert.equal(r.clean, false);
  assert.deepEqual(r.issues, [{ line: 3, field: '(syntax)', message: "duplicate key 'seed' (first at line 2)" }]);
});

test('a check past its deadline is given up by name; the next check gets a new thread', async () => {
  // The deadline is shorter than starting a thread at all, so the first check cannot make it.
  const slow = new ConfigThread(1);
  threads.push(slow);
  await assert.rejects(
    slow.check('name: x\n', '/w/a.rft.yaml'),
    /checking \/w\/a\.rft\.yaml took over 0\.001 s: given up/,
  );
  slow.deadlineMs = 30_000;
  const r = await slow.check('taskset:\n  builtin: arith\nworkflow:\n  reward: math_answer\n', '/w/b.rft.yaml');
  assert.equal(r.clean, true);
});
