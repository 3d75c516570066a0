// One trainer per distributed run, fenced (issue 24 item 2). A second trainer on the same run used to
// be accepted: both trained, the second overwrote the first's checkpoint records ((run_id, version)
// upserts) and the first finished "done". Now a trainer takes the run's lease (an epoch in the
// database); a second one is refused naming the holder; one that takes over (--take-over, or the
// holder stopped renewing) fences the first: every write of the first compares its epoch in the
// write's transaction and fails, so nothing it writes after the takeover lands.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PostgresStore, parsePostgresUrl } from '../../backend/buffer/storage/postgres.js';
import {
  TrainerFencedError,
  TrainerLeaseHeldError,
  type TrainerLeaseRow,
} from '../../backend/buffer/storage/trainer-lease.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer, holderGone } from '../../backend/coordinator/placement/distributed.js';
import { thisMachine } from '../../backend/coordinator/placement/machine.js';
import { makeExp, pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { JobQueue } from '../../backend/buffer/queue/job-queue.js';
import type { Task } from '../../backend/core/types.js';
import { tinyConfig } from './tiny-config.js';

/** One query on the run's schema, as an operator would run it in psql. */
async function sql(url: string, text: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  const p = parsePostgresUrl(url);
  const c = new pg.Client({ connectionString: p.connectionString, options: `-c search_path=${p.schema}` });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as Record<string, unknown>[];
  } finally {
    await c.end();
  }
}

const count = async (url: string, text: string, params: unknown[] = []) => Number((await sql(url, text, params))[0]!.n);

test('trainer lease (PostgreSQL store): a second trainer is refused naming the holder; after a takeover every write of the first fails and writes nothing', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const url = pgSchemaUrl(server.url);
  const a = await PostgresStore.open(url);
  const b = await PostgresStore.open(url);
  try {
    const first = await a.acquireTrainerLease('r', { holder: 'trainer-A', host: 'host-a', pid: 111 });
    assert.equal(first.lease.epoch, 1);
    assert.equal(first.tookFrom, null);
    await a.addCheckpoint({ runId: 'r', version: 1, path: '/a/v1', checksum: 'a1', createdAt: 1 });
    await a.appendExperiences([makeExp('e1', { runId: 'r' }), makeExp('e2', { runId: 'r' })]);

    // A second trainer while the first renews: refused, with who holds it and since when, and the way out.
    await assert.rejects(
      b.acquireTrainerLease('r', { holder: 'trainer-B', host: 'host-b', pid: 222 }),
      (e: Error) =>
        e instanceof TrainerLeaseHeldError &&
        /another trainer holds it: trainer-A \(host host-a, pid 111, epoch 1\) since \d{4}-\d\d-\d\dT/.test(
          e.message,
        ) &&
        /expires 120 s after its last renewal/.test(e.message) &&
        /--take-over/.test(e.message),
    );
    // Another run in the same database has its own lease.
    assert.equal(
      (await b.acquireTrainerLease('other', { holder: 'trainer-B', host: 'host-b', pid: 222 })).lease.epoch,
      1,
    );
    await a.renewTrainerLease('r');

    // Forced takeover: epoch 2, and the first trainer is fenced.
    const took = await b.acquireTrainerLease('r', { holder: 'trainer-B', host: 'host-b', pid: 222, takeOver: true });
    assert.equal(took.lease.epoch, 2);
    assert.equal(took.tookFrom?.holder, 'trainer-A');
    const namesB = (e: unknown) =>
      e instanceof TrainerFencedError &&
      /lost the run's lease to trainer-B \(host host-b, pid 222, epoch 2\)/.test((e as Error).message);
    // Its next publish (a new version, and an upsert of one the holder has) is refused, its batch too.
    await assert.rejects(
      a.addCheckpoint({ runId: 'r', version: 2, path: '/a/v2', checksum: 'a2', createdAt: 2 }),
      (e: Error) => namesB(e) && /checkpoint record v2 not written/.test(e.message),
    );
    await assert.rejects(
      a.addCheckpoint({ runId: 'r', version: 1, path: '/a/v1-again', checksum: 'a1x', createdAt: 3 }),
      namesB,
    );
    await assert.rejects(
      a.takeFifo({ n: 2, source: 'usual', runId: 'r', consumer: 'trainer', step: 5 }),
      (e: Error) => namesB(e) && /batch of step 5/.test(e.message),
    );
    await assert.rejects(a.setState('r', 'dist:done', { step: 2 }), namesB);
    await assert.rejects(a.renewTrainerLease('r'), namesB);
    // What the database holds: only the first record, no batch recorded, no row used, no state.
    assert.equal(await count(url, `SELECT count(*) AS n FROM checkpoints WHERE run_id = 'r' AND path LIKE '/a/%'`), 1);
    assert.equal((await sql(url, `SELECT path FROM checkpoints WHERE run_id = 'r' AND version = 1`))[0]!.path, '/a/v1');
    assert.equal(await count(url, `SELECT count(*) AS n FROM consumption WHERE run_id = 'r'`), 0);
    assert.equal(await count(url, `SELECT COALESCE(SUM(use_count), 0) AS n FROM experiences WHERE run_id = 'r'`), 0);
    assert.equal(await count(url, `SELECT count(*) AS n FROM run_state WHERE run_id = 'r'`), 0);
    // The holder writes as before.
    await b.addCheckpoint({ runId: 'r', version: 2, path: '/b/v2', checksum: 'b2', createdAt: 4 });
    assert.equal(
      (await b.takeFifo({ n: 2, source: 'usual', runId: 'r', consumer: 'trainer', step: 5 })).experiences.length,
      2,
    );
    // The fenced trainer ending does not release the holder's lease.
    await a.releaseTrainerLease('r');
    await assert.rejects(
      a.acquireTrainerLease('r', { holder: 'trainer-C', host: 'host-c', pid: 333 }),
      TrainerLeaseHeldError,
    );
    // A released lease is free at once (the usual restart of a stopped trainer).
    await b.releaseTrainerLease('r');
    assert.equal((await a.acquireTrainerLease('r', { holder: 'trainer-C', host: 'host-c', pid: 333 })).lease.epoch, 3);

    // A holder that stopped renewing for longer than the timeout has lost the lease (no --take-over needed).
    await a.acquireTrainerLease('quiet', { holder: 'trainer-A', host: 'host-a', pid: 111 });
    await assert.rejects(
      b.acquireTrainerLease('quiet', { holder: 'trainer-B', host: 'host-b', pid: 222, timeoutMs: 5000 }),
      /expires 5 s after its last renewal/,
    );
    await new Promise((r) => setTimeout(r, 400));
    const expired = await b.acquireTrainerLease('quiet', {
      holder: 'trainer-B',
      host: 'host-b',
      pid: 222,
      timeoutMs: 300,
    });
    assert.equal(expired.lease.epoch, 2);
    await assert.rejects(
      a.addCheckpoint({ runId: 'quiet', version: 1, path: '/a/q1', checksum: 'q', createdAt: 5 }),
      TrainerFencedError,
    );
    assert.equal(await count(url, `SELECT count(*) AS n FROM checkpoints WHERE run_id = 'quiet'`), 0);

    // A store that holds no lease (explorers, the coordinator) is not fenced.
    const plain = await PostgresStore.open(url);
    try {
      await plain.setState('r', 'dist:config-note', 'x');
      await plain.addCheckpoint({ runId: 'r', version: 0, path: '/coord/v0', checksum: 'c0', createdAt: 0 });
    } finally {
      await plain.close();
    }
  } finally {
    await a.close();
    await b.close();
    server.stop();
  }
});

test('jobs queued by a fenced trainer: the insert compares the lease epoch in its transaction, so a taken-over trainer queues nothing (issue 24 item 2)', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const url = pgSchemaUrl(server.url);
  const a = await PostgresStore.open(url);
  const b = await PostgresStore.open(url);
  const qa = await JobQueue.open(url);
  const qb = await JobQueue.open(url);
  const coordinator = await JobQueue.open(url);
  const job = (id: string, target: number, rv = 0) => ({
    id,
    target,
    requiredVersion: rv,
    task: { id: `t${id}`, taskset: 't', prompt: `p${id}` } as Task,
  });
  try {
    const la = await a.acquireTrainerLease('j', { holder: 'trainer-A', host: 'host-a', pid: 111 });
    qa.fence('j', la.lease.epoch);
    assert.equal(await qa.addJobs('j', [job('0:0', 0), job('0:1', 0)]), 2, 'the holder queues as before');
    const lb = await b.acquireTrainerLease('j', { holder: 'trainer-B', host: 'host-b', pid: 222, takeOver: true });
    qb.fence('j', lb.lease.epoch);
    // A's next jobs (its own plan, or required versions no record will have) are refused, naming the holder.
    await assert.rejects(
      qa.addJobs('j', [job('1:0', 1, 1), job('1:1', 1, 1)]),
      (e: Error) =>
        e instanceof TrainerFencedError &&
        /lost the run's lease to trainer-B \(host host-b, pid 222, epoch 2\)/.test(e.message) &&
        /2 job\(s\) \(1:0, \.\.\.\) not written/.test(e.message),
    );
    assert.equal(await count(url, `SELECT count(*) AS n FROM rft_jobs WHERE run_id = 'j'`), 2);
    assert.equal(
      await count(url, `SELECT count(*) AS n FROM rft_jobs WHERE run_id = 'j' AND target = 1`),
      0,
      'no job of the fenced trainer',
    );
    // The holder queues; a queue that holds no lease (the coordinator's setup) is not fenced; another run is its own.
    assert.equal(await qb.addJobs('j', [job('1:0', 1, 1)]), 1);
    assert.equal(await coordinator.addJobs('j', [job('2:0', 2)]), 1);
    assert.equal(await qa.addJobs('other', [job('0:0', 0)]), 1);
    // Released (the holder ended): a fenced queue still queues nothing.
    await b.releaseTrainerLease('j');
    await assert.rejects(
      qb.addJobs('j', [job('3:0', 3)]),
      (e: Error) => e instanceof TrainerFencedError && /nobody \(it was released\)/.test(e.message),
    );
    assert.equal(await count(url, `SELECT count(*) AS n FROM rft_jobs WHERE run_id = 'j'`), 4);
  } finally {
    await qa.close();
    await qb.close();
    await coordinator.close();
    await a.close();
    await b.close();
    server.stop();
  }
});

test('rft trainer on a run whose lease is held: exit 1, the holder and the way out on stderr, the lease untouched', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const url = pgSchemaUrl(server.url);
  const holder = await PostgresStore.open(url);
  try {
    await holder.acquireTrainerLease('cli', { holder: 'trainer@elsewhere:4242-abc', host: 'elsewhere', pid: 4242 });
    const root = join(import.meta.dirname, '..', '..');
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', join(root, 'backend/cli.ts'), 'trainer', '--buffer', url, '--run', 'cli'],
      { cwd: root, encoding: 'utf8', timeout: 120_000 },
    );
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /rft: run cli: another trainer holds it: trainer@elsewhere:4242-abc \(host elsewhere, pid 4242, epoch 1\) since .*--take-over/,
    );
    const lease = await holder.trainerLease('cli');
    assert.deepEqual([lease?.epoch, lease?.holder, lease?.released], [1, 'trainer@elsewhere:4242-abc', false]);
  } finally {
    await holder.close();
    server.stop();
  }
});

test('a lease holder whose process is gone is taken at once only when proven on this very machine (boot id and pid namespace), never by hostname', () => {
  const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
  const here = thisMachine();
  assert.match(here, /^[0-9a-f-]{36}\/pid:\[\d+\]$/, 'Linux: boot id and pid namespace');
  const row = (host: string, pid: number, machine: string): TrainerLeaseRow => ({
    runId: 'r',
    epoch: 1,
    holder: 'x',
    host,
    pid,
    machine,
    since: 0,
    renewedAt: 0,
    released: false,
  });
  assert.equal(holderGone(row(hostname(), dead, here)), true);
  assert.equal(holderGone(row(hostname(), process.ppid, here)), false);
  assert.equal(holderGone(row(hostname(), process.pid, here)), false, 'another trainer in this process is alive');
  // Issue 40 item 13: another machine with the same hostname (a cloned VM, hosts all named `ubuntu`):
  // its trainer's pid is unknown here, which proves nothing.
  const elsewhere = `00000000-0000-0000-0000-000000000000/${here.split('/')[1]}`;
  assert.equal(holderGone(row(hostname(), dead, elsewhere)), false, 'same hostname, another boot id');
  assert.equal(holderGone(row(hostname(), dead, `${here.split('/')[0]}/pid:[1]`)), false, 'another pid namespace');
  assert.equal(holderGone(row(hostname(), dead, '')), false, 'a holder that recorded no machine');
  assert.equal(holderGone(row(hostname(), dead, here), ''), false, 'here unknown (no /proc): nothing proven');
});

test('two trainers on one PostgreSQL run: the second is refused; after --take-over the first fails at its next write, writing no checkpoint record', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const dir = mkdtempSync(join(tmpdir(), 'rft-fence-'));
  const MIX = 10;
  try {
    const url = pgSchemaUrl(server.url);
    const wA = join(dir, 'weights'); // the coordinator's folder: trainer A's
    const wB = join(dir, 'weights-b'); // trainer B's folder, as on another machine
    await createDistributedRun(tinyConfig({ sync_offset: 0 }, MIX), url, 'tf', wA);
    const stopEx = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'tf', signal: stopEx.signal, leaseMs: 20_000 });
    try {
      const outA = join(dir, 'out-a');
      const mixSteps = () =>
        existsSync(join(outA, 'metrics.jsonl'))
          ? readFileSync(join(outA, 'metrics.jsonl'), 'utf8')
              .split('\n')
              .filter((l) => l.includes('"kind":"train"') && l.includes('"stage":"mix"')).length
          : 0;
      // A renews rarely (60 s): what stops it is its next write, not a renewal.
      const a = distributedTrainer({ url, runId: 'tf', outDir: outA, serveWeights: false, heartbeatMs: 60_000 });
      const aDone = a.then(
        (r) => ({ ok: r }),
        (e: Error) => ({ err: e }),
      );
      while (mixSteps() < 2) {
        const early = await Promise.race([aDone, new Promise((r) => setTimeout(r, 20, null))]);
        if (early) assert.fail(`trainer A ended before the takeover: ${JSON.stringify(early)}`);
      }
      // B while A holds the lease: refused at start, naming A's host and pid.
      await assert.rejects(
        distributedTrainer({ url, runId: 'tf', outDir: join(dir, 'out-b'), weightsDir: wB, serveWeights: false }),
        (e: Error) =>
          e instanceof TrainerLeaseHeldError &&
          e.message.includes(`(host ${hostname()}, pid ${process.pid}, epoch 1) since `),
      );
      assert.equal(
        await count(url, `SELECT count(*) AS n FROM checkpoints WHERE run_id = 'tf' AND path LIKE $1`, [`${wB}%`]),
        0,
        'the refused trainer wrote no record',
      );
      // Forced: B takes the run and trains it to the end; A fails at its next write.
      const b = distributedTrainer({
        url,
        runId: 'tf',
        outDir: join(dir, 'out-b'),
        weightsDir: wB,
        serveWeights: false,
        takeOver: true,
      });
      const resA = await aDone;
      assert.ok('err' in resA, `trainer A finished although fenced: ${JSON.stringify(resA)}`);
      assert.ok(resA.err instanceof TrainerFencedError, resA.err.message);
      assert.match(resA.err.message, /lost the run's lease to trainer@.* epoch 2\)/);
      t.diagnostic(`trainer A stopped with: ${resA.err.message}`);
      const resB = await b;
      assert.equal(resB.done, true);
      assert.equal(resB.step, 2 + MIX);

      const [lease] = await sql(url, `SELECT epoch, since FROM rft_trainer_lease WHERE run_id = 'tf'`);
      assert.equal(Number(lease!.epoch), 2);
      const since = Number(lease!.since);
      const byA = await count(
        url,
        `SELECT count(*) AS n FROM checkpoints WHERE run_id = 'tf' AND path LIKE $1 AND created_at >= $2`,
        [`${wA}/%`, since],
      );
      const byABefore = await count(
        url,
        `SELECT count(*) AS n FROM checkpoints WHERE run_id = 'tf' AND path LIKE $1 AND created_at < $2`,
        [`${wA}/%`, since],
      );
      const byB = await count(url, `SELECT count(*) AS n FROM checkpoints WHERE run_id = 'tf' AND path LIKE $1`, [
        `${wB}/%`,
      ]);
      const versions = await sql(url, `SELECT version, path FROM checkpoints WHERE run_id = 'tf' ORDER BY version`);
      t.diagnostic(
        `checkpoint records: ${byABefore} by A before the takeover, ${byA} by A after it, ${byB} by B; versions ${versions.map((v) => v.version).join(',')}`,
      );
      assert.equal(byA, 0, 'no checkpoint record written by the fenced trainer after the takeover');
      assert.ok(byABefore >= 3, `A published before the takeover (${byABefore})`);
      assert.ok(byB >= 1, 'B published');
      // Every version from v0 to the end is recorded once, none after B's last by A.
      assert.deepEqual(
        versions.map((v) => Number(v.version)),
        Array.from({ length: 2 + MIX + 1 }, (_, i) => i),
      );
      assert.equal(String(versions.at(-1)!.path).startsWith(wB), true);
      // Ended normally, B gave the lease back: the next trainer starts without --take-over.
      assert.equal(
        Number((await sql(url, `SELECT released FROM rft_trainer_lease WHERE run_id = 'tf'`))[0]!.released),
        1,
      );
    } finally {
      stopEx.abort();
      await explorer.catch(() => undefined);
    }
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
