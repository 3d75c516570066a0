// The distributed trainer's sampler on a real PostgreSQL: it queues the jobs of steps t .. t+offset
// (idempotently), and when a read would wait while no job that could still fill it is open (groups
// that produced nothing trainable), it queues top-up jobs for the missing groups — and none while an
// open job could still fill the batch.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JobQueue, experienceId } from '../../../backend/buffer/queue/job-queue.js';
import { PostgresStore } from '../../../backend/buffer/storage/postgres.js';
import { makeSampler, SampleTimeoutError } from '../../../backend/buffer/sampler/index.js';
import type { Task } from '../../../backend/core/types.js';
import { setLogSink } from '../../../backend/core/log.js';
import { FeedingSampler } from '../../../backend/coordinator/distributed/feeding-sampler.js';
import { makeExp, pgSchemaUrl, startPg } from '../../buffer/storage-helpers.js';

const server = startPg();
const GROUP = 4;
const tasks: Task[] = Array.from({ length: 8 }, (_, i) => ({ id: `t${i}`, taskset: 's', prompt: `p${i}` }) as Task);
const plan = { tasks, seed: 1, tasksPerStep: 2, sync: { interval: 1, offset: 1, stageStartVersion: 0 } };

if ('skip' in server) {
  describe('feeding sampler: postgres', () => test('PostgreSQL unavailable', { skip: server.skip }, () => undefined));
} else {
  after(() => server.stop());

  test('queues steps t..t+offset once; tops up only when nothing open can fill the batch', async () => {
    const url = pgSchemaUrl(server.url);
    const store = await PostgresStore.open(url);
    const q = await JobQueue.open(url);
    try {
      const s = new FeedingSampler(
        makeSampler(store, { type: 'fifo', consumer: 'trainer', runId: 'R', maxStaleness: 1 }),
        q,
        'R',
        plan,
        GROUP,
      );
      await s.feed(0);
      await s.feed(0);
      assert.deepEqual(await q.counts('R'), { queued: 4 }, 'jobs 0:0 0:1 1:0 1:1, once');
      // Every job done, but only one group trainable: the others' answers were invalid.
      const jobs = await q.lease('R', 'E', 0, 10, 60_000);
      assert.deepEqual(
        jobs.map((j) => j.id),
        ['0:0', '0:1', '1:0', '1:1'],
      );
      for (const [k, j] of jobs.entries()) {
        const exps = Array.from({ length: GROUP }, (_, i) =>
          makeExp(experienceId('R', j.id, i), { runId: 'R', modelVersion: 0, status: k === 0 ? 'ok' : 'invalid' }),
        );
        assert.equal((await q.ack('R', j, 'E', 0, 1, exps)).ok, true);
      }
      await assert.rejects(
        s.sample({ batchSize: 2 * GROUP, currentVersion: 0, step: 0, timeoutMs: 2500 }),
        SampleTimeoutError,
      );
      assert.equal(s.topUps, 1, 'one group missing: one top-up job');
      const [top] = await q.lease('R', 'E', 0, 10, 60_000);
      assert.equal(top!.id, '0:x0');
      // While that top-up is open (leased), waiting adds no more.
      await assert.rejects(
        s.sample({ batchSize: 2 * GROUP, currentVersion: 0, step: 0, timeoutMs: 2500 }),
        SampleTimeoutError,
      );
      assert.equal(s.topUps, 1, 'no top-up while an open job can still fill the batch');
      await q.ack(
        'R',
        top!,
        'E',
        0,
        1,
        Array.from({ length: GROUP }, (_, i) =>
          makeExp(experienceId('R', top!.id, i), { runId: 'R', modelVersion: 0 }),
        ),
      );
      const b = await s.sample({ batchSize: 2 * GROUP, currentVersion: 0, step: 0, timeoutMs: 5000 });
      assert.equal(b.experiences.length, 2 * GROUP);
      assert.deepEqual(
        [...new Set(b.experiences.map((e) => e.id.replace(/:\d+$/, '')))].sort(),
        ['R:0:0', 'R:0:x0'],
        'the trainable group and its top-up',
      );
      assert.deepEqual(
        s.last.map((e) => e.id),
        b.experiences.map((e) => e.id),
        'the newest batch, for the per-step metrics',
      );
    } finally {
      await q.close();
      await store.close();
    }
  });

  test("a long wait says why in the trainer's log: the explorers' error, or that none runs", async () => {
    const url = pgSchemaUrl(server.url);
    const store = await PostgresStore.open(url);
    const q = await JobQueue.open(url);
    const lines: string[] = [];
    setLogSink((level, scope, msg) => void (scope === 'dist-trainer' && lines.push(`${level} ${msg}`)));
    try {
      const s = new FeedingSampler(
        makeSampler(store, { type: 'fifo', consumer: 'trainer', runId: 'R', maxStaleness: 1 }),
        q,
        'R',
        plan,
        GROUP,
      );
      await assert.rejects(
        s.sample({ batchSize: GROUP, currentVersion: 0, step: 0, timeoutMs: 11_500 }),
        SampleTimeoutError,
      );
      assert.equal(lines.length, 1, lines.join('\n'));
      assert.match(lines[0]!, /^warn waiting 1\d s for experiences .*no explorer is running/);
      await q.heartbeat('R', {
        id: 'explorer@h:1-abcdef',
        role: 'explorer',
        state: 'error',
        detail: 'weights v0: http://10.0.0.5:4000/weights/…/: ECONNREFUSED',
        done: 0,
        throughput: 0,
        startedAt: Date.now(),
      });
      const beat = setInterval(
        () =>
          void q.heartbeat('R', {
            id: 'explorer@h:1-abcdef',
            role: 'explorer',
            state: 'error',
            detail: 'weights v0: http://10.0.0.5:4000/weights/…/: ECONNREFUSED',
            done: 0,
            throughput: 0,
            startedAt: Date.now(),
          }),
        1000,
      );
      const s2 = new FeedingSampler(
        makeSampler(store, { type: 'fifo', consumer: 'trainer', runId: 'R', maxStaleness: 1 }),
        q,
        'R',
        plan,
        GROUP,
      );
      await assert
        .rejects(s2.sample({ batchSize: GROUP, currentVersion: 0, step: 0, timeoutMs: 11_500 }), SampleTimeoutError)
        .finally(() => clearInterval(beat));
      assert.match(lines[1]!, /: 1 explorer\(s\) in error: weights v0: .*ECONNREFUSED$/);
    } finally {
      setLogSink((level, scope, msg) => void process.stderr.write(`${level} ${scope}: ${msg}\n`));
      await q.close();
      await store.close();
    }
  });
}
