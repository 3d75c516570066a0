// Scale-out under faults: a trainer and 3 explorers as separate hosts (network namespaces made here;
// plain processes on loopback where that is impossible) against a PostgreSQL server started here.
// Mid-run: kill -9 of an explorer holding a lease, a crash-restart of PostgreSQL, kill -9 of the
// trainer (started again: it resumes), and one explorer's
// host cut off for longer than a lease, then reconnected. The run must finish, and the database must
// show every acknowledged experience exactly once (acked jobs have exactly their group, unacked jobs
// none), no experience trained twice, every trained experience within the staleness bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import { stringify } from 'yaml';
import { cliCommand } from '../../backend/coordinator/processes.js';
import { withRetry } from '../../backend/buffer/queue/retry.js';
import { makeHosts } from './hosts.js';
import { startCluster } from './pg-cluster.js';

const STEPS = 40;
const TASKS_PER_STEP = 2;
const REPEAT = 4;
const STALENESS = 2;
const LEASE_MS = 3000;
const RUN = 'so1';

function config() {
  return {
    name: 'scaleout',
    seed: 3,
    model: { size: 'tiny-0.4m', max_seq_len: 32 },
    tokenizer: { kind: 'char' },
    taskset: { builtin: 'reverse', size: 60 },
    eval: { builtin: 'reverse', size: 8, split: 'eval' },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: {
      tasks_per_step: TASKS_PER_STEP,
      repeat_times: REPEAT,
      sampling: { max_new_tokens: 4 },
      eval_sampling: { max_new_tokens: 4 },
    },
    trainer: { batch_size: TASKS_PER_STEP * REPEAT, steps: STEPS },
    algorithm: { name: 'grpo' },
    buffer: { storage: 'postgres', max_staleness: STALENESS },
    placement: 'checkpoint',
    synchronizer: { sync_interval: 1, sync_offset: 1 },
  };
}

interface Proc {
  name: string;
  child: ChildProcess;
  out: string;
  exit: Promise<number | null>;
}

function track(name: string, child: ChildProcess): Proc {
  const p: Proc = {
    name,
    child,
    out: '',
    exit: new Promise((res) => child.on('exit', (code, sig) => res(sig === 'SIGKILL' ? -9 : code))),
  };
  child.stdout?.on('data', (b: Buffer) => (p.out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (p.out += b.toString()));
  return p;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  'trainer + 3 explorers on separate hosts survive kill -9 (explorer, trainer), a database restart and a network cut; exactly once',
  { timeout: 240_000 },
  async (t) => {
    const hosts = makeHosts(4);
    const cluster = startCluster(hosts.serverAddr, hosts.subnet);
    if ('skip' in cluster) {
      hosts.teardown();
      t.skip(cluster.skip);
      return;
    }
    t.diagnostic(`hosts: ${hosts.mode}${hosts.mode === 'loopback' ? ' (network cut emulated by SIGSTOP)' : ''}`);
    const dir = mkdtempSync(join(tmpdir(), 'rft-scaleout-'));
    const remote = cluster.url(hosts.serverAddr) + '?schema=so';
    const procs: Proc[] = [];
    // The test's own connections also live through the restart: a pool reconnects, queries retry.
    const db = new pg.Pool({ connectionString: cluster.url('127.0.0.1'), options: '-c search_path=so', max: 2 });
    db.on('error', () => undefined);
    db.on('connect', (c) => c.on('error', () => undefined));
    const q = async (sql: string, p: unknown[] = []) =>
      withRetry(async () => (await db.query(sql, p)).rows as Record<string, unknown>[], { maxMs: 60_000 });
    try {
      const cfgFile = join(dir, 'run.yaml');
      writeFileSync(cfgFile, stringify(config()));
      const cli = cliCommand();
      const coord = track(
        'coordinator',
        hosts.spawn(0, process.execPath, [
          ...cli,
          'coordinator',
          cfgFile,
          '--buffer',
          remote,
          '--run',
          RUN,
          '--weights',
          join(dir, 'weights'),
        ]),
      );
      assert.equal(await coord.exit, 0, coord.out);
      const trainer = track(
        'trainer',
        hosts.spawn(0, process.execPath, [...cli, 'trainer', '--buffer', remote, '--run', RUN]),
      );
      // No shared folder: each explorer's host sees an empty folder where the trainer's weights are (a
      // private tmpfs mounted over it), so every version must come over HTTP from the trainer's host.
      const weightsDir = join(dir, 'weights');
      const hide = process.getuid?.() === 0 && spawnSync('unshare', ['-m', 'true']).status === 0;
      t.diagnostic(
        hide
          ? 'explorers do not see the weights folder (tmpfs over it in their own mount namespace)'
          : 'cannot hide the weights folder from the explorers (not root / no unshare): HTTP use is still checked',
      );
      // Explorer 2 (host 2, the one cut off later) logs each job's start (debug), so the cut can land mid-rollout.
      const explorerCmd = (h: number) => {
        const args = [...cli, 'explorer', '--buffer', remote, '--run', RUN, '--lease-ms', String(LEASE_MS)];
        const env = h === 2 ? { ...process.env, RFT_LOG_LEVEL: 'debug' } : process.env;
        return hide
          ? hosts.spawn(
              h,
              'unshare',
              ['-m', 'sh', '-c', 'mount -t tmpfs tmpfs "$0" && exec "$@"', weightsDir, process.execPath, ...args],
              env,
            )
          : hosts.spawn(h, process.execPath, args, env);
      };
      const explorers = [1, 2, 3].map((h) => track(`explorer${h}`, explorerCmd(h)));
      procs.push(trainer, ...explorers);
      const deadline = Date.now() + 200_000;
      const version = async () =>
        Number((await q('SELECT COALESCE(MAX(version), 0) AS v FROM checkpoints WHERE run_id = $1', [RUN]))[0]!.v);
      const until = async (what: string, cond: () => Promise<boolean>) => {
        while (!(await cond())) {
          if (Date.now() > deadline)
            assert.fail(
              `timed out waiting for ${what}\n${procs.map((p) => `--- ${p.name}\n${p.out.slice(-1500)}`).join('\n')}`,
            );
          await sleep(50);
        }
      };

      // 1. kill -9 explorer 1 while it holds a lease (mid-rollout). A rollout of this tiny model can end
      // between the query that sees the lease and the kill, so the explorer is frozen (SIGSTOP) first and
      // the lease checked again: only a job still leased by the frozen process is its victim job.
      const victim = explorers[0]!;
      const victimOwner = `explorer@%:${victim.child.pid}-%`;
      let victimJob = '';
      await until('explorer 1 to hold a lease after a few acks', async () => {
        const done = Number(
          (await q(`SELECT COUNT(*) AS n FROM rft_jobs WHERE run_id = $1 AND state = 'done'`, [RUN]))[0]!.n,
        );
        const held = await q(`SELECT id FROM rft_jobs WHERE run_id = $1 AND state = 'leased' AND lease_owner LIKE $2`, [
          RUN,
          victimOwner,
        ]);
        if (done < 3 || !held.length) return false;
        victim.child.kill('SIGSTOP');
        await sleep(200); // a commit already on the wire lands before the check
        const still = await q(
          `SELECT id FROM rft_jobs WHERE run_id = $1 AND id = $2 AND state = 'leased' AND lease_owner LIKE $3`,
          [RUN, held[0]!.id, victimOwner],
        );
        if (still.length) victimJob = String(still[0]!.id);
        else victim.child.kill('SIGCONT'); // acked meanwhile: let it go on and wait for its next lease
        return victimJob !== '';
      });
      victim.child.kill('SIGKILL');
      t.diagnostic(`killed explorer 1 (pid ${victim.child.pid}) holding job ${victimJob}`);

      // 2. Crash-restart PostgreSQL.
      await until('version 8', async () => (await version()) >= 8);
      cluster.restart();
      t.diagnostic('PostgreSQL restarted');

      // 3. kill -9 the trainer; started again, it resumes from its last checkpoint and buffer position.
      await until('version 12', async () => (await version()) >= 12);
      trainer.child.kill('SIGKILL');
      assert.equal(await trainer.exit, -9);
      const killedAt = await version();
      const trainer2 = track(
        'trainer2',
        hosts.spawn(0, process.execPath, [...cli, 'trainer', '--buffer', remote, '--run', RUN]),
      );
      procs.push(trainer2);
      t.diagnostic(`killed the trainer at v${killedAt}, started it again`);

      // 4. Cut explorer 2's host off in the middle of a rollout, for longer than a lease, then reconnect
      // it. The cut follows its "generating: job J" line at once; if the job was acked before the cut
      // took effect (a rollout is short), the link comes back and the next job is tried.
      const cutProc = explorers[1]!;
      const cutOwner = `explorer@%:${cutProc.child.pid}-%`;
      await until('version 18', async () => (await version()) >= 18);
      let cutJob = '';
      for (let attempt = 1; !cutJob; attempt++) {
        assert.ok(attempt <= 20, `the cut never landed mid-rollout in 20 tries\n${cutProc.out.slice(-2000)}`);
        const from = cutProc.out.length;
        const job = await new Promise<string>((res, rej) => {
          // A timer keeps this wait from hanging the test silently (the run may end before the line comes).
          const timer = setTimeout(() => {
            cutProc.child.stderr!.off('data', onData);
            rej(new Error(`explorer 2 started no job in 60 s (run over before the cut?)\n${cutProc.out.slice(-2000)}`));
          }, 60_000);
          const onData = () => {
            const m = /generating: job (\S+) with/.exec(cutProc.out.slice(from));
            if (m) {
              hosts.cut(2, cutProc.child);
              clearTimeout(timer);
              cutProc.child.stderr!.off('data', onData);
              res(m[1]!);
            }
          };
          cutProc.child.stderr!.on('data', onData);
        });
        await sleep(300);
        const mine = await q(
          `SELECT 1 FROM rft_jobs WHERE run_id = $1 AND id = $2 AND state = 'done' AND acked_by LIKE $3`,
          [RUN, job, cutOwner],
        );
        // That job acked before the cut, but the explorer leases several at once: one it still holds will do.
        const held =
          mine.length === 0
            ? []
            : await q(
                `SELECT id FROM rft_jobs WHERE run_id = $1 AND state = 'leased' AND lease_owner LIKE $2 ORDER BY id LIMIT 1`,
                [RUN, cutOwner],
              );
        if (mine.length === 0) cutJob = job;
        else if (held.length) cutJob = String(held[0]!.id);
        else {
          hosts.restore(2, cutProc.child);
          t.diagnostic(`cut try ${attempt}: job ${job} was acked before the cut took effect; again`);
          await sleep(1500);
        }
      }
      await sleep(LEASE_MS * 2 + 1000);
      hosts.restore(2, cutProc.child);
      const restoredAt = Number((await q('SELECT extract(epoch from clock_timestamp()) * 1000 AS now'))[0]!.now);
      t.diagnostic(`explorer 2 cut off in the middle of job ${cutJob}, and restored`);

      const codes = await Promise.race([
        Promise.all([trainer2.exit, explorers[1]!.exit, explorers[2]!.exit]),
        new Promise<null>((res) => setTimeout(() => res(null), Math.max(0, deadline - Date.now())).unref()),
      ]);
      assert.ok(
        codes,
        `run did not finish in time\n${procs.map((p) => `--- ${p.name}\n${p.out.slice(-2000)}`).join('\n')}`,
      );
      assert.deepEqual(codes, [0, 0, 0], procs.map((p) => `--- ${p.name}\n${p.out.slice(-2000)}`).join('\n'));
      assert.equal(await victim.exit, -9);

      // Every acknowledged job has exactly its group of experiences, written by the worker that acked
      // it under the attempt it acked; jobs never acked have none.
      const jobs = await q(
        'SELECT id, state, attempts, acked_by, acked_version, required_version, experiences FROM rft_jobs WHERE run_id = $1',
        [RUN],
      );
      const exps = await q(
        `SELECT id, model_version, use_count, source, extra FROM experiences WHERE run_id = $1 AND source = 'usual'`,
        [RUN],
      );
      const byJob = new Map<string, { id: string; worker: string; attempt: number; version: number }[]>();
      for (const e of exps) {
        const m = (JSON.parse(String(e.extra)) as { metadata?: { job: string; worker: string; attempt: number } })
          .metadata!;
        const list = byJob.get(m.job) ?? [];
        list.push({ id: String(e.id), worker: m.worker, attempt: m.attempt, version: Number(e.model_version) });
        byJob.set(m.job, list);
      }
      let acked = 0;
      for (const j of jobs) {
        const got = byJob.get(String(j.id)) ?? [];
        if (j.state === 'done') {
          acked++;
          assert.equal(got.length, REPEAT, `job ${j.id}: ${got.length} experiences, want ${REPEAT}`);
          assert.equal(new Set(got.map((g) => g.id)).size, REPEAT);
          for (const g of got) {
            assert.equal(g.worker, j.acked_by, `job ${j.id}: experience from ${g.worker}, acked by ${j.acked_by}`);
            assert.equal(
              g.attempt,
              Number(j.attempts),
              `job ${j.id}: experience of attempt ${g.attempt}, acked attempt ${j.attempts}`,
            );
            assert.ok(
              g.version >= Number(j.required_version),
              `job ${j.id}: v${g.version} below required v${j.required_version}`,
            );
          }
        } else
          assert.equal(got.length, 0, `job ${j.id} (${j.state}) was never acked but has ${got.length} experiences`);
      }
      assert.equal(exps.length, acked * REPEAT);
      for (const jobId of byJob.keys())
        assert.ok(
          jobs.some((j) => j.id === jobId),
          `experiences of unknown job ${jobId}`,
        );
      const vj = jobs.find((j) => j.id === victimJob)!;
      assert.equal(vj.state, 'done', `the killed explorer's job ${victimJob} was taken over`);
      assert.ok(Number(vj.attempts) >= 2, `job ${victimJob}: attempts ${vj.attempts}`);
      assert.ok(!String(vj.acked_by).includes(`:${victim.child.pid}-`));

      // The trainer: every step one full batch, no experience twice, each within the staleness bound.
      const seen = new Set<string>();
      const versionOf = new Map(exps.map((e) => [String(e.id), Number(e.model_version)]));
      for (let s = 0; s < STEPS; s++) {
        const ids = (
          await q(`SELECT experience_id FROM consumption WHERE consumer = 'trainer' AND step = $1 ORDER BY pos`, [s])
        ).map((r) => String(r.experience_id));
        assert.equal(ids.length, TASKS_PER_STEP * REPEAT, `step ${s}: batch of ${ids.length}`);
        for (const id of ids) {
          assert.ok(!seen.has(id), `${id} trained twice`);
          seen.add(id);
          const v = versionOf.get(id);
          assert.ok(v !== undefined, `step ${s}: consumed ${id} is not an acked usual experience`);
          assert.ok(v >= s - STALENESS && v <= s, `step ${s}: ${id} made by v${v}, outside [${s - STALENESS}, ${s}]`);
        }
      }
      for (const e of exps) if (seen.has(String(e.id))) assert.equal(Number(e.use_count), 1);

      // The job the cut landed in: retried and acked by another explorer; the cut one's late ack was refused.
      const cj = jobs.find((j) => j.id === cutJob)!;
      assert.equal(cj.state, 'done');
      assert.ok(Number(cj.attempts) >= 2, `job ${cutJob}: attempts ${cj.attempts}`);
      assert.ok(
        !String(cj.acked_by).includes(`:${cutProc.child.pid}-`),
        `job ${cutJob} was acked by the cut-off explorer`,
      );
      const cutResult = JSON.parse(cutProc.out.split('\n').find((l) => l.includes('explorer_result'))!) as {
        refused: { lease_lost: number; stale: number };
      };
      assert.ok(
        cutResult.refused.lease_lost + cutResult.refused.stale >= 1,
        `the cut-off explorer's late ack was not refused: ${JSON.stringify(cutResult)}`,
      );

      // Status: every worker has a row; the cut-off explorer came back (heartbeats after reconnecting).
      const workers = await q(
        'SELECT id, role, state, model_version, last_heartbeat FROM rft_workers WHERE run_id = $1',
        [RUN],
      );
      assert.equal(workers.filter((w) => w.role === 'explorer').length, 3);
      const trainers = workers.filter((w) => w.role === 'trainer');
      assert.equal(trainers.length, 2, 'the killed trainer and its successor');
      assert.equal(trainers.find((w) => String(w.id).includes(`:${trainer2.child.pid}-`))?.state, 'done');
      assert.equal(
        Number(/"startedFrom":(\d+)/.exec(trainer2.out)?.[1]),
        killedAt,
        'the restarted trainer resumed from the last checkpoint',
      );
      const back = workers.find((w) => String(w.id).includes(`:${cutProc.child.pid}-`))!;
      assert.ok(
        Number(back.last_heartbeat) > restoredAt,
        'the cut-off explorer never heartbeat again after reconnecting',
      );
      t.diagnostic(
        `jobs ${jobs.length} (${acked} acked, ${jobs.filter((j) => Number(j.attempts) > 1).length} retried), experiences ${exps.length}, trained ${seen.size}`,
      );
      t.diagnostic(
        `explorer results: ${explorers.map((p) => p.out.split('\n').find((l) => l.includes('explorer_result')) ?? '-').join(' | ')}`,
      );
      // Weights came over HTTP from the trainer's host (through both trainers: the restarted one serves at a new port).
      for (const p of explorers.slice(1)) {
        const r = JSON.parse(p.out.split('\n').find((l) => l.includes('explorer_result'))!) as {
          loads: { folder: number; http: number };
        };
        assert.ok(r.loads.http > 0, `${p.name} fetched nothing over HTTP: ${JSON.stringify(r.loads)}`);
        if (hide) assert.equal(r.loads.folder, 0, `${p.name} read the folder it should not see`);
      }
    } finally {
      for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await db.end().catch(() => undefined);
      cluster.stop();
      hosts.teardown();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
