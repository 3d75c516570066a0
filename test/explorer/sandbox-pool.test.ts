// The pool: workers are reused, replaced after the code kills them, recycled after maxJobsPerWorker;
// a worker stuck beyond the vm timeout is SIGKILLed by the host (a timeout, the code's fault); a
// worker that never accepts a job is the sandbox's fault and the job is retried on a fresh one.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SandboxPool } from '../../backend/explorer/sandbox/index.js';
import type { WorkerProcess } from '../../backend/explorer/sandbox/worker-process.js';

const add = { code: 'function add(a, b) { return a + b }', entryPoint: 'add', args: [[2, 3]] };
const pids = (pool: SandboxPool) => [...(pool['workers'] as Set<WorkerProcess>)].map((w) => w.child.pid!).sort();

test('workers are reused across jobs and replaced after a crash; a queue longer than the pool drains', async () => {
  const pool = new SandboxPool({ workers: 2, timeoutMs: 300, maxJobsPerWorker: 30 });
  try {
    await pool.warm();
    const first = pids(pool);
    assert.equal(first.length, 2);
    const results = await Promise.all(Array.from({ length: 20 }, () => pool.run(add)));
    assert.ok(results.every((r) => r.status === 'ok' && r.calls[0]?.ok && r.calls[0].value === 5));
    assert.deepEqual(pids(pool), first, 'the same two processes ran all 20 jobs');
    assert.equal(pool.startupMs.length, 2);
    const oom = await pool.run({ code: 'const a = []; for (;;) a.push(new Array(1e6).fill(1.5))', timeoutMs: 5000 });
    assert.deepEqual([oom.status, oom.status === 'ok' && oom.kind], ['ok', 'memory']);
    // replacements start on demand: two jobs at once need a second worker again
    const two = await Promise.all([pool.run(add), pool.run(add), pool.run(add)]);
    assert.ok(two.every((r) => r.status === 'ok'));
    await pool.warm();
    assert.equal(pool.startupMs.length, 3, 'the dead worker was replaced by one new one');
    assert.equal(pids(pool).length, 2);
    // 30 jobs per worker at most: 70 more jobs on two workers make at least one retire
    await Promise.all(Array.from({ length: 70 }, () => pool.run(add)));
    assert.ok(pool.startupMs.length >= 4, `recycled: ${pool.startupMs.length} starts`);
  } finally {
    await pool.close();
  }
});

test('a worker stuck past the vm timeout is SIGKILLed by the host: a timeout, status ok', async () => {
  const pool = new SandboxPool({ workers: 1, timeoutMs: 200, killGraceMs: 300 });
  try {
    await pool.warm();
    const [pid] = pids(pool);
    const pending = pool.run({ code: 'function f() { for (;;) {} }', entryPoint: 'f', args: [[]] });
    // Freeze the whole process (the vm watchdog thread too), as a blocking native call would.
    await new Promise((r) => setTimeout(r, 50));
    process.kill(-pid!, 'SIGSTOP'); // the worker's process group: inside a PID namespace the program is a child of unshare
    const r = await pending;
    assert.equal(r.status, 'ok');
    if (r.status === 'ok') {
      assert.equal(r.kind, 'timeout');
      assert.match(r.error, /wall-clock/);
    }
    assert.equal((await pool.run(add)).status, 'ok', 'a fresh worker took over');
  } finally {
    await pool.close();
  }
});

test('a worker that never accepts the job is a sandbox fault: retried once on a fresh worker', async () => {
  const pool = new SandboxPool({ workers: 1, ackTimeoutMs: 400 });
  try {
    await pool.warm();
    const [pid] = pids(pool);
    process.kill(-pid!, 'SIGSTOP'); // idle and frozen (its whole group): it will not acknowledge
    const r = await pool.run(add);
    assert.equal(r.status, 'ok', JSON.stringify(r));
    assert.notDeepEqual(pids(pool), [pid]);
  } finally {
    await pool.close();
  }
});

test('closing the pool ends queued and running jobs as infra failures', async () => {
  const pool = new SandboxPool({ workers: 1, timeoutMs: 5000 });
  await pool.warm();
  const running = pool.run({ code: 'for (;;) {}' });
  const queued = pool.run(add);
  await new Promise((r) => setTimeout(r, 50));
  await pool.close();
  assert.equal((await running).status, 'infra_failure');
  assert.equal((await queued).status, 'infra_failure');
});
