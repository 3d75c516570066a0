// A PostgreSQL crash-restart that lands INSIDE an ack transaction, and the LISTEN connection coming
// back after it. The ack is held mid-transaction on purpose: the test keeps an uncommitted row with
// the id of the group's first experience, so the ack (job row already locked FOR UPDATE) waits in
// its INSERT; the test sees it waiting in pg_stat_activity and restarts the server (`immediate`:
// every connection cut, nothing committed by the ack). The retried ack must then land the group
// exactly once, under the same lease.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { JobQueue, experienceId, workerId, type NewJob } from '../../backend/buffer/queue/job-queue.js';
import { WeightsListener } from '../../backend/buffer/queue/listen.js';
import { withRetry } from '../../backend/buffer/queue/retry.js';
import { PostgresStore } from '../../backend/buffer/storage/postgres.js';
import type { Task } from '../../backend/core/types.js';
import { ROW_COLUMNS, rowValues, toRow } from '../../backend/buffer/storage/codec.js';
import { makeExp } from '../buffer/storage-helpers.js';
import { startCluster } from './pg-cluster.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  'a database restart during an ack transaction: nothing half-done, the retried ack lands once; LISTEN reconnects',
  { timeout: 180_000 },
  async (t) => {
    const cluster = startCluster('127.0.0.1', null);
    if ('skip' in cluster) return t.skip(cluster.skip);
    const url = cluster.url('127.0.0.1');
    const store = await PostgresStore.open(url);
    const q = await JobQueue.open(url);
    const blocker = new pg.Client({ connectionString: url });
    blocker.on('error', () => undefined);
    const watcher = new pg.Pool({ connectionString: url, max: 1 });
    watcher.on('error', () => undefined);
    const got: number[] = [];
    const states: boolean[] = [];
    const listener = new WeightsListener(
      q.connectionString,
      q.schema,
      'R',
      (v) => void got.push(v),
      (up) => void states.push(up),
    );
    try {
      listener.start();
      const job: NewJob = {
        id: '0:0',
        target: 0,
        requiredVersion: 0,
        task: { id: 't0', taskset: 't', prompt: 'p' } as Task,
      };
      await q.addJobs('R', [job]);
      const me = workerId('explorer');
      const [leased] = await q.lease('R', me, 0, 1, 120_000);
      assert.ok(leased);
      const exps = Array.from({ length: 4 }, (_, i) =>
        makeExp(experienceId('R', leased.id, i), { runId: 'R', modelVersion: 0 }),
      );

      // Hold the ack inside its transaction: an uncommitted row with the first experience's id.
      await blocker.connect();
      await blocker.query('BEGIN');
      // The row the store would write for the group's first experience (another run's, same id).
      const blockRow = rowValues(toRow(makeExp(exps[0]!.id, { runId: 'blocker', modelVersion: 0 })));
      await blocker.query(
        `INSERT INTO experiences (${ROW_COLUMNS.join(', ')}) VALUES (${blockRow.map((_, i) => `$${i + 1}`).join(', ')})`,
        blockRow,
      );

      let acked: Awaited<ReturnType<JobQueue['ack']>> | undefined;
      let retries = 0;
      const ack = withRetry(() => q.ack('R', leased, me, 0, 2, exps), { onRetry: () => void retries++ }).then(
        (r) => (acked = r),
      );
      // The ack is inside its transaction, waiting in its INSERT on the blocker's uncommitted row.
      for (let i = 0; ; i++) {
        const w = await watcher.query(
          `SELECT COUNT(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO experiences%ON CONFLICT%'`,
        );
        if (Number(w.rows[0].n) > 0) break;
        assert.ok(i < 200 && acked === undefined, 'the ack never waited inside its transaction');
        await sleep(50);
      }
      const jobRow = await watcher.query(`SELECT state FROM rft_jobs WHERE run_id = 'R' AND id = '0:0'`);
      assert.equal(jobRow.rows[0].state, 'leased', 'not done while the transaction is open');
      cluster.restart();
      t.diagnostic('PostgreSQL restarted with the ack mid-transaction');
      await ack;
      assert.ok(retries >= 1, 'the ack was cut by the restart and retried');
      assert.deepEqual(acked, { ok: true, inserted: 4 }, 'the retried ack landed the whole group');
      const db = async (sql: string, p: unknown[] = []) =>
        withRetry(async () => (await watcher.query(sql, p)).rows as Record<string, unknown>[], { maxMs: 30_000 });
      const rows = await db(`SELECT id, run_id FROM experiences WHERE id LIKE 'R:%'`);
      assert.deepEqual(rows.map((r) => r.id).sort(), exps.map((e) => e.id).sort(), 'exactly the group, once');
      assert.equal(
        (await db(`SELECT COUNT(*) AS n FROM experiences WHERE run_id = 'blocker'`))[0]!.n,
        '0',
        "the blocker's uncommitted row died with the restart",
      );
      const [j] = await db(
        `SELECT state, attempts, acked_by, experiences FROM rft_jobs WHERE run_id = 'R' AND id = '0:0'`,
      );
      assert.deepEqual(
        { ...j, attempts: Number(j!.attempts) },
        { state: 'done', attempts: 1, acked_by: me, experiences: 4 },
      );

      // LISTEN: the listener lost its connection with the restart and came back by itself.
      for (let i = 0; !(states.includes(false) && states.at(-1) === true); i++) {
        assert.ok(i < 300, `the LISTEN connection did not come back: ${JSON.stringify(states)}`);
        await sleep(100);
      }
      await withRetry(() => q.notifyWeights('R', 7), { maxMs: 30_000 });
      await withRetry(() => q.notifyWeights('other-run', 8), { maxMs: 30_000 });
      for (let i = 0; !got.includes(7); i++) {
        assert.ok(i < 100, `no notification after the reconnect: ${JSON.stringify(got)}`);
        await sleep(100);
      }
      assert.ok(!got.includes(8), "another run's notification is not ours");
      t.diagnostic(`listener states ${JSON.stringify(states)}, notified ${JSON.stringify(got)}`);
    } finally {
      await listener.close();
      await blocker.end().catch(() => undefined);
      await watcher.end().catch(() => undefined);
      await q.close().catch(() => undefined);
      await store.close().catch(() => undefined);
      cluster.stop();
    }
  },
);
