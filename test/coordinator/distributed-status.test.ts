// Issue 24 (low): `rft status` showed no distributed runs: they live in their database, not in the
// workspace's registry. `rft status --buffer URL` lists them (state, newest version, jobs, trainer,
// explorers) without creating anything in that database; `rft status` with no local run says where to look.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { JobQueue } from '../../backend/buffer/queue/job-queue.js';
import { PostgresStore } from '../../backend/buffer/storage/postgres.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedRuns } from '../../backend/coordinator/distributed/runs-status.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { tinyConfig } from './tiny-config.js';

const root = join(import.meta.dirname, '..', '..');
const rft = (args: string[], cwd = root) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(root, 'backend/cli.ts'), ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, RFT_LOG_LEVEL: 'warn' },
  });

test('rft status --buffer URL lists the distributed runs of that database; an empty schema is reported, not created', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const dir = mkdtempSync(join(tmpdir(), 'rft-dist-status-'));
  try {
    const url = pgSchemaUrl(server.url);
    await createDistributedRun(tinyConfig({ sync_offset: 0 }, 4), url, 'ds', join(dir, 'w'));
    await createDistributedRun(tinyConfig({ sync_offset: 0 }, 4), url, 'ds2', join(dir, 'w'));
    const r = rft(['status', '--buffer', url]);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 2, r.stdout);
    assert.match(
      lines[0]!,
      /^ds\s+distributed waiting\s+version v0 {2}jobs none {2}trainer none {2}0 explorer\(s\) at work$/,
    );
    assert.match(lines[1]!, /^ds2\s+distributed waiting/);

    // A trainer reporting, an explorer in error and one silent; then the run done.
    const q = await JobQueue.open(url);
    const store = await PostgresStore.open(url);
    try {
      await q.heartbeat('ds', {
        id: 'trainer@h:1-a',
        role: 'trainer',
        state: 'training',
        done: 3,
        throughput: 1,
        startedAt: 0,
      });
      await q.heartbeat('ds', {
        id: 'explorer@h:2-b',
        role: 'explorer',
        state: 'error',
        detail: 'weights v1: ECONNREFUSED',
        done: 0,
        throughput: 0,
        startedAt: 0,
      });
      await q.heartbeat('ds', {
        id: 'explorer@h:3-c',
        role: 'explorer',
        state: 'generating',
        done: 0,
        throughput: 0,
        startedAt: 0,
      });
      await q.pool.query(`UPDATE rft_workers SET last_heartbeat = last_heartbeat - 60000 WHERE id = 'explorer@h:3-c'`);
      const [ds] = await distributedRuns(q);
      assert.deepEqual(
        [ds!.runId, ds!.state, ds!.version, ds!.trainer, ds!.explorers],
        ['ds', 'training', 0, 'trainer@h:1-a (training)', { live: 0, error: 1, silent: 1 }],
      );
      await store.setState('ds', 'dist:done', { step: 6 });
      assert.equal((await distributedRuns(q))[0]!.state, 'done');
    } finally {
      await q.close();
      await store.close();
    }

    // A schema with no run: said so, and nothing is created there.
    const empty = new URL(url);
    empty.searchParams.set('schema', 'no_such_schema_' + process.pid);
    const e = rft(['status', '--buffer', empty.toString()]);
    assert.equal(e.status, 0, e.stderr);
    assert.match(e.stdout, new RegExp(`^no distributed runs in schema no_such_schema_${process.pid} of this database`));
    const c = new pg.Client({ connectionString: server.url });
    await c.connect();
    try {
      assert.equal(
        (
          await c.query(`SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = $1`, [
            `no_such_schema_${process.pid}`,
          ])
        ).rows[0].n,
        0,
      );
    } finally {
      await c.end();
    }
    // No local run: the message says where distributed runs are listed.
    const ws = mkdtempSync(join(dir, 'ws-'));
    assert.match(
      rft(['status', '--workspace', ws]).stdout,
      /no runs \(distributed runs are listed by their database: rft status --buffer postgres:\/\/\.\.\.\)/,
    );
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a run whose trainer died: rft status, rft workers and workers/list say "trainer lost N s ago (last heartbeat …)"; an explorer gives up after --trainer-wait, exit 3', async (t) => {
  // Issue 40 item 15: explorers logged `waiting: no job planned yet` forever and `rft status` said
  // `trainer none  1 explorer(s) at work`. The trainer here takes the lease and beats, then stops
  // renewing (as a killed one does): its lease row and row are 90 s old.
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const dir = mkdtempSync(join(tmpdir(), 'rft-dist-lost-'));
  try {
    const url = pgSchemaUrl(server.url);
    await createDistributedRun(tinyConfig({ sync_offset: 0 }, 4), url, 'r15', join(dir, 'w'));
    const q = await JobQueue.open(url);
    const store = await PostgresStore.open(url);
    try {
      await store.acquireTrainerLease('r15', { holder: 'trainer-A', host: 'host-a', pid: 4242 });
      await q.heartbeat('r15', {
        id: 'trainer-A',
        role: 'trainer',
        state: 'waiting',
        done: 2,
        throughput: 0,
        startedAt: 0,
      });
      const fresh = rft(['status', '--buffer', url]);
      assert.match(fresh.stdout, /trainer trainer-A \(waiting\)/);
      assert.doesNotMatch(fresh.stdout, /trainer lost/);
      await q.pool.query(`UPDATE rft_trainer_lease SET renewed_at = renewed_at - 90000`);
      await q.pool.query(`UPDATE rft_workers SET last_heartbeat = last_heartbeat - 90000`);
    } finally {
      await q.close();
      await store.close();
    }
    const lost =
      /trainer lost (9\d|1\d\d) s ago \(last heartbeat \d{4}-\d\d-\d\dT[\d:.]+Z, trainer-A on host-a, pid 4242\)/;
    const st = rft(['status', '--buffer', url]);
    assert.equal(st.status, 0, st.stderr);
    assert.match(st.stdout, new RegExp(`^r15\\s+distributed waiting\\s+version v0 {2}jobs none {2}${lost.source}`));
    const wk = rft(['workers', '--buffer', url, '--run', 'r15']);
    assert.equal(wk.status, 0, wk.stderr);
    assert.match(wk.stdout, lost);
    // An explorer joining now: it has nothing to wait for past its --trainer-wait.
    const ex = rft(['explorer', '--buffer', url, '--run', 'r15', '--trainer-wait', '30']);
    assert.equal(ex.status, 3, ex.stderr);
    assert.match(ex.stderr, lost);
    assert.match(ex.stderr, /this explorer waited 30 s for it \(--trainer-wait\) and exits/);
    const bad = rft(['explorer', '--buffer', url, '--run', 'r15', '--trainer-wait', '-1']);
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--trainer-wait: seconds \(0 = wait forever\), got -1/);
    // Its row says why it left; a finished run's trainer is not "lost".
    const q2 = await JobQueue.open(url);
    const store2 = await PostgresStore.open(url);
    try {
      const row = (await q2.workers('r15')).find((w) => w.role === 'explorer')!;
      assert.equal(row.state, 'stopped');
      assert.match(row.detail ?? '', lost);
      await store2.setState('r15', 'dist:done', { step: 4 });
    } finally {
      await q2.close();
      await store2.close();
    }
    assert.doesNotMatch(rft(['status', '--buffer', url]).stdout, /trainer lost/);
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
