// The distributed job queue on a real PostgreSQL: leases are exclusive, expire and are taken over;
// an ack lands experiences + completion together, only under a live lease of the acking attempt, and
// only with fresh enough weights; a repeated ack adds nothing.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JobQueue, experienceId, workerId, type NewJob } from '../../backend/buffer/queue/job-queue.js';
import { PostgresStore } from '../../backend/buffer/storage/postgres.js';
import { isConnectionError, withRetry } from '../../backend/buffer/queue/retry.js';
import type { Task } from '../../backend/core/types.js';
import { makeExp, pgSchemaUrl, startPg } from './storage-helpers.js';

const server = startPg();
const task = (id: string): Task => ({ id, taskset: 't', prompt: `p${id}` }) as Task;
const jobs = (n: number, target = 0, rv = 0): NewJob[] =>
  Array.from({ length: n }, (_, k) => ({ id: `${target}:${k}`, target, requiredVersion: rv, task: task(`t${k}`) }));
const exps = (run: string, job: string, n: number, version = 0) =>
  Array.from({ length: n }, (_, i) => makeExp(experienceId(run, job, i), { runId: run, modelVersion: version }));

async function open() {
  if ('skip' in server) throw new Error('unreachable');
  const url = pgSchemaUrl(server.url);
  const store = await PostgresStore.open(url); // creates the buffer's tables (checkpoints, experiences)
  const q = await JobQueue.open(url);
  return { store, q, close: async () => (await q.close(), await store.close()) };
}

if ('skip' in server) {
  describe('job queue: postgres', () => test('PostgreSQL unavailable', { skip: server.skip }, () => undefined));
} else {
  after(() => server.stop());

  test('leases are exclusive, ordered by target, and limited by the model version', async () => {
    const { q, close } = await open();
    try {
      assert.equal(await q.addJobs('r', [...jobs(2, 1, 1), ...jobs(2, 0, 0)]), 4);
      assert.equal(await q.addJobs('r', jobs(2, 0, 0)), 0, 'adding again is a no-op');
      const a = await q.lease('r', 'A', 0, 10, 60_000);
      assert.deepEqual(
        a.map((j) => j.id),
        ['0:0', '0:1'],
        'v0 may only run target-0 jobs',
      );
      const [b, c] = await Promise.all([q.lease('r', 'B', 1, 1, 60_000), q.lease('r', 'C', 1, 1, 60_000)]);
      assert.equal(b!.length + c!.length, 2);
      assert.notEqual(b![0]!.id, c![0]!.id, 'two explorers never get the same job');
      assert.deepEqual(await q.lease('r', 'D', 5, 10, 60_000), []);
    } finally {
      await close();
    }
  });

  test('an expired lease is taken over, and the old holder cannot ack it', async () => {
    const { q, store, close } = await open();
    try {
      await q.addJobs('r', jobs(1));
      const [mine] = await q.lease('r', 'A', 0, 1, 50);
      await new Promise((r) => setTimeout(r, 120));
      assert.equal(await q.renew('r', 'A', 60_000), 0, 'an expired lease is not renewed');
      const [theirs] = await q.lease('r', 'B', 0, 1, 60_000);
      assert.equal(theirs!.id, mine!.id);
      assert.equal(theirs!.attempt, 2);
      assert.deepEqual(await q.ack('r', mine!, 'A', 0, 2, exps('r', mine!.id, 3)), { ok: false, reason: 'lease_lost' });
      assert.equal(await store.count({ runId: 'r' }), 0, 'nothing of the refused ack landed');
      assert.deepEqual(await q.ack('r', theirs!, 'B', 0, 2, exps('r', theirs!.id, 3)), { ok: true, inserted: 3 });
      assert.deepEqual(
        await q.ack('r', theirs!, 'B', 0, 2, exps('r', theirs!.id, 3)),
        { ok: true, inserted: 0 },
        'a repeated ack is idempotent',
      );
      assert.equal(await store.count({ runId: 'r' }), 3);
      assert.deepEqual(await q.counts('r'), { done: 1 });
    } finally {
      await close();
    }
  });

  test('an expired lease nobody took is still not ackable; stale weights send the job back', async () => {
    const { q, store, close } = await open();
    try {
      await q.addJobs('r', jobs(2));
      const [j0, j1] = await q.lease('r', 'A', 0, 2, 50);
      await new Promise((r) => setTimeout(r, 120));
      assert.deepEqual(await q.ack('r', j0!, 'A', 0, 2, exps('r', j0!.id, 2)), { ok: false, reason: 'lease_lost' });
      const [again] = await q.lease('r', 'A', 0, 1, 60_000);
      await store.addCheckpoint({ runId: 'r', version: 5, path: '/x', checksum: '', createdAt: Date.now() });
      assert.deepEqual(
        await q.ack('r', again!, 'A', 2, 2, exps('r', again!.id, 2, 2)),
        { ok: false, reason: 'stale' },
        'v2 is 3 behind v5 (bound 2)',
      );
      assert.equal(await q.openJobs('r', 0), 2);
      const back = await q.lease('r', 'B', 3, 2, 60_000);
      assert.equal(back.length, 2, 'both jobs are leasable again');
      assert.equal(j1!.target, 0);
      assert.deepEqual(await q.ack('r', back[0]!, 'B', 3, 2, exps('r', back[0]!.id, 2, 3)), { ok: true, inserted: 2 });
      await q.release('r', back[1]!, 'B');
      assert.deepEqual(await q.counts('r'), { done: 1, queued: 1 });
    } finally {
      await close();
    }
  });

  test("a heartbeat landing after the worker's final one (stopped) changes nothing: the final state wins", async () => {
    // Issue 40 item 16: 1 of 19 cleanly exited explorers stayed `waiting` (a beat in flight landed last).
    const { q, close } = await open();
    const beat = (state: string, done: number) =>
      q.heartbeat('r', { id: 'explorer@h:9', role: 'explorer', state, done, throughput: 0, startedAt: 0 });
    try {
      await beat('waiting', 1);
      await beat('stopped', 5);
      await beat('waiting', 4); // the in-flight one
      const [w] = await q.workers('r');
      assert.deepEqual([w!.state, w!.done], ['stopped', 5]);
      // A trainer's final `done` and `fenced` hold the same way; live states still update.
      for (const last of ['done', 'fenced']) {
        const id = `trainer@h:${last}`;
        const b = (state: string) =>
          q.heartbeat('r', { id, role: 'trainer', state, done: 0, throughput: 0, startedAt: 0 });
        await b('training');
        await b('syncing');
        await b(last);
        await b('training');
        assert.equal((await q.workers('r')).find((x) => x.id === id)!.state, last);
      }
    } finally {
      await close();
    }
  });

  test('heartbeats list the workers; connection errors are recognised and retried', async () => {
    const { q, close } = await open();
    try {
      await q.heartbeat('r', {
        id: 'explorer@h:1',
        role: 'explorer',
        state: 'generating',
        modelVersion: 3,
        done: 8,
        throughput: 2.5,
        startedAt: Date.now(),
      });
      const [w] = await q.workers('r');
      assert.equal(w!.state, 'generating');
      assert.equal(w!.modelVersion, 3);
      assert.ok(w!.ageS >= 0 && w!.ageS < 5);
      assert.ok(isConnectionError(Object.assign(new Error('x'), { code: '57P01' })));
      assert.ok(!isConnectionError(Object.assign(new Error('dup'), { code: '23505' })));
      let n = 0;
      const r = await withRetry(async () => {
        if (++n < 3) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
        return 'ok';
      });
      assert.equal(r, 'ok');
      await assert.rejects(
        withRetry(async () => {
          throw Object.assign(new Error('dup'), { code: '23505' });
        }),
        /dup/,
      );
    } finally {
      await close();
    }
  });
  test('a lease check before the rollout: live only for its holder and attempt, with the newest version', async () => {
    const { q, store, close } = await open();
    try {
      await q.addJobs('r', jobs(2));
      // A 1 s lease: the checks right after it must land inside it even on a loaded machine.
      const [a0, a1] = await q.lease('r', 'A', 0, 2, 1000);
      assert.deepEqual(await q.leaseCheck('r', a0!, 'A'), { live: true, latest: 0 });
      assert.equal((await q.leaseCheck('r', a0!, 'B')).live, false, 'not the holder');
      await new Promise((r) => setTimeout(r, 1200));
      assert.equal((await q.leaseCheck('r', a1!, 'A')).live, false, 'expired, even though nobody took it yet');
      const [b] = await q.lease('r', 'B', 0, 1, 60_000);
      assert.equal(b!.id, a0!.id);
      assert.equal((await q.leaseCheck('r', a0!, 'A')).live, false, 'taken over by attempt 2');
      assert.equal((await q.leaseCheck('r', b!, 'B')).live, true);
      await store.addCheckpoint({ runId: 'r', version: 4, path: '/x', checksum: '', createdAt: Date.now() });
      await store.addCheckpoint({ runId: 'other', version: 9, path: '/y', checksum: '', createdAt: Date.now() });
      assert.equal((await q.leaseCheck('r', b!, 'B')).latest, 4, "the newest version of this run, not another run's");
    } finally {
      await close();
    }
  });

  test('run existence; silent workers are aged out of the list; worker ids differ per start', async () => {
    const { q, store, close } = await open();
    try {
      assert.equal(await q.runExists('nope'), false);
      await q.heartbeat('w', {
        id: 'explorer@h:1-aaaaaa',
        role: 'explorer',
        state: 'waiting',
        done: 0,
        throughput: 0,
        startedAt: Date.now(),
      });
      assert.equal(await q.runExists('w'), true, 'a run with a worker row exists');
      await store.setState('s', 'dist:config', { x: 1 });
      assert.equal(await q.runExists('s'), true, 'a run with only its stored config exists');
      // Wide margins: under a loaded CI machine the second heartbeat -> query gap can pass tens of ms.
      await new Promise((r) => setTimeout(r, 1500));
      await q.heartbeat('w', {
        id: 'explorer@h:2-bbbbbb',
        role: 'explorer',
        state: 'waiting',
        done: 0,
        throughput: 0,
        startedAt: Date.now(),
      });
      assert.deepEqual(
        (await q.workers('w', { pruneAfterMs: 1000 })).map((x) => x.id),
        ['explorer@h:2-bbbbbb'],
        'the silent worker was aged out',
      );
      assert.deepEqual(
        (await q.workers('w')).map((x) => x.id),
        ['explorer@h:2-bbbbbb'],
        'and stays out',
      );
      const ids = new Set(Array.from({ length: 20 }, () => workerId('explorer')));
      assert.equal(ids.size, 20, 'same host and pid, still 20 distinct ids');
      for (const id of ids) assert.match(id, new RegExp(`^explorer@.+:${process.pid}-[0-9a-f]{6}$`));
    } finally {
      await close();
    }
  });
}
