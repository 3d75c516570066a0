// Partial rollouts on the distributed job queue (real PostgreSQL): an ack writes a group's partial
// rows and queues its continuation in one transaction; the continuation is leased by one explorer at a
// time; an explorer that lost the lease (crashed, paused) cannot replace the rows, the one that took
// the job over does; rows that are no longer partial are never replaced.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { JobQueue, experienceId, type NewJob } from '../../backend/buffer/queue/job-queue.js';
import pg from 'pg';
import { parsePostgresUrl, PostgresStore } from '../../backend/buffer/storage/postgres.js';
import { ConflictError } from '../../backend/core/errors.js';
import type { Experience, Task } from '../../backend/core/types.js';
import { makeExp, pgSchemaUrl, startPg } from './storage-helpers.js';

const server = startPg();
const task: Task = { id: 't0', taskset: 't', prompt: 'p' } as Task;
const job: NewJob = { id: '0:0', target: 0, requiredVersion: 0, task };
const partialRows = (n: number, tokens: number): Experience[] =>
  Array.from({ length: n }, (_, i) => {
    const e = makeExp(experienceId('r', job.id, i), { runId: 'r', groupId: 'r:job:0:0', status: 'partial', reward: 0 });
    const responseTokens = e.responseTokens.slice(0, tokens);
    return {
      ...e,
      responseTokens,
      actionMask: responseTokens.map(() => 1),
      logprobs: e.logprobs.slice(0, tokens),
      segments: [{ version: 0, start: 0, end: tokens, step: 0 }],
      metadata: { partial: { finished: false, task } },
    };
  });

// The column every sampling read filters on.
const trainable = async (q: JobQueue) =>
  Number((await q.pool.query(`SELECT COUNT(*) AS n FROM experiences WHERE run_id = 'r' AND trainable = 1`)).rows[0].n);

if ('skip' in server) {
  describe('partial job queue: postgres', () => test('PostgreSQL unavailable', { skip: server.skip }, () => undefined));
} else {
  after(() => server.stop());

  test('a continuation is leased once, replaced only under a live lease, and comes back when its holder is lost', async () => {
    const url = pgSchemaUrl(server.url);
    const store = await PostgresStore.open(url);
    const q = await JobQueue.open(url);
    try {
      await q.addJobs('r', [job]);
      const [first] = await q.lease('r', 'A', 0, 1, 60_000);
      const rows = partialRows(2, 6);
      const ids = rows.map((e) => e.id);
      const next: NewJob = { id: '0:0~c1', target: 0, requiredVersion: 0, task, continues: ids };
      assert.deepEqual(await q.ack('r', first!, 'A', 0, 1, rows, { next }), { ok: true, inserted: 2 });
      assert.deepEqual(await q.counts('r'), { done: 1, queued: 1 }, 'the continuation is queued with the ack');
      assert.equal(await trainable(q), 0, 'partial rows are not trainable');

      // Two explorers ask at once: one gets the continuation, with the rows it names.
      const [b, c] = await Promise.all([q.lease('r', 'B', 0, 1, 1000), q.lease('r', 'C', 0, 1, 1000)]);
      assert.equal(b!.length + c!.length, 1, 'one explorer holds the continuation');
      const held = (b!.length ? b! : c!)[0]!;
      const holder = b!.length ? 'B' : 'C';
      assert.deepEqual(held.continues, ids);
      assert.deepEqual(
        (await q.partialRows('r', held.continues!)).map((e) => e.responseTokens.length),
        [6, 6],
      );

      // The holder is lost (its lease runs out); D takes the job over and continues the stored prefixes.
      await new Promise((r) => setTimeout(r, 1500));
      const [over] = await q.lease('r', 'D', 1, 1, 60_000);
      assert.equal(over!.id, '0:0~c1');
      assert.equal(over!.attempt, 2);
      const grown = (await q.partialRows('r', over!.continues!)).map((e) => ({
        ...e,
        responseTokens: [...e.responseTokens, 5, 6],
        actionMask: [...e.actionMask, 1, 1],
        logprobs: [...e.logprobs, -1, -1],
        segments: [...e.segments!, { version: 1, start: 6, end: 8, step: 0 }],
      }));
      const late = grown.map((e) => ({ ...e, status: 'ok' as const, reward: 1, metadata: {} }));
      assert.deepEqual(
        await q.ack('r', held, holder, 0, 1, late, { replacing: ids }),
        { ok: false, reason: 'lease_lost' },
        'the lost holder cannot replace the rows',
      );
      assert.deepEqual(
        (await q.partialRows('r', ids)).map((e) => e.responseTokens.length),
        [6, 6],
        'the refused ack changed nothing',
      );
      const finished = grown.map((e) => ({ ...e, status: 'ok' as const, reward: 1, metadata: {} }));
      assert.deepEqual(await q.ack('r', over!, 'D', 1, 1, finished, { replacing: ids }), { ok: true, inserted: 2 });
      const after = await store.getMany(ids);
      assert.deepEqual(
        after.map((e) => [e.status, e.responseTokens.length, e.segments!.length]),
        [
          ['ok', 8, 2],
          ['ok', 8, 2],
        ],
      );
      assert.equal(await trainable(q), 2);
      assert.deepEqual(await q.counts('r'), { done: 2 }, 'a finished group queues no continuation');

      // A continuation naming rows that are no longer partial is refused as a whole (nothing written).
      await q.addJobs('r', [{ id: '0:0~c2', target: 0, requiredVersion: 0, task, continues: ids }]);
      const [bad] = await q.lease('r', 'E', 1, 1, 60_000);
      await assert.rejects(q.ack('r', bad!, 'E', 1, 1, partialRows(2, 6), { replacing: ids }), ConflictError);
      assert.deepEqual(
        (await store.getMany(ids)).map((e) => e.status),
        ['ok', 'ok'],
      );
    } finally {
      await q.close();
      await store.close();
    }
  });

  test('a job table made before continuation jobs gets its column when a queue opens; its jobs lease as before', async () => {
    const url = pgSchemaUrl(server.url);
    const store = await PostgresStore.open(url);
    const { connectionString, schema } = parsePostgresUrl(url);
    const c = new pg.Client({ connectionString, options: `-c search_path=${schema}` });
    await c.connect();
    try {
      // The table as the previous schema made it (no `continues`), with a queued job.
      await c.query(`CREATE TABLE rft_jobs (run_id TEXT NOT NULL, id TEXT NOT NULL, seq BIGINT GENERATED ALWAYS AS IDENTITY, target INTEGER NOT NULL,
        required_version INTEGER NOT NULL, task TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'queued', lease_owner TEXT, lease_until DOUBLE PRECISION,
        attempts INTEGER NOT NULL DEFAULT 0, acked_by TEXT, acked_version INTEGER, acked_at DOUBLE PRECISION, experiences INTEGER, PRIMARY KEY (run_id, id))`);
      await c.query(`INSERT INTO rft_jobs (run_id, id, target, required_version, task) VALUES ('r', '0:0', 0, 0, $1)`, [
        JSON.stringify(task),
      ]);
      const q = await JobQueue.open(url);
      try {
        const [old] = await q.lease('r', 'A', 0, 1, 60_000);
        assert.equal(old!.id, '0:0');
        assert.equal(old!.continues, undefined);
        await q.addJobs('r', [{ id: '0:1~c1', target: 0, requiredVersion: 0, task, continues: ['x'] }]);
        assert.deepEqual((await q.lease('r', 'A', 0, 1, 60_000))[0]!.continues, ['x']);
      } finally {
        await q.close();
      }
    } finally {
      await c.end();
      await store.close();
    }
  });
}
