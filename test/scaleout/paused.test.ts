// Explorers paused (SIGSTOP) in the middle of a rollout, as a VM migration or a debugger would.
// A. An explorer holding several leases (--batch 5, short leases) is paused in its first job until
//    another explorer has done all of them; after SIGCONT the job in progress is refused at its ack
//    (lease lost) and the others are checked before their rollout and dropped, not rolled out.
// B. An explorer with a long lease is paused in a rollout while the trainer moves more than
//    max_staleness versions on; after SIGCONT its lease is still live but its ack is refused as stale
//    (end to end: the real ack, through the real explorer), and the job goes back to the queue.
// Neither lands anything: every done job has exactly its group, made by the worker that acked it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { cliCommand } from '../../backend/coordinator/processes.js';
import { startPg } from '../buffer/storage-helpers.js';

const STEPS = 60;
const TPS = 4;
const REPEAT = 4;
const S = 1;
const RUN = 'paused';

interface Proc {
  name: string;
  child: ChildProcess;
  out: string;
  exit: Promise<number | null>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  'paused explorers: leases lost while paused are dropped unrolled, a rollout gone stale is refused end to end',
  { timeout: 300_000 },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const dir = mkdtempSync(join(tmpdir(), 'rft-paused-'));
    const url = server.url;
    const db = new pg.Client({ connectionString: url });
    const procs: Proc[] = [];
    const cli = cliCommand();
    const start = (name: string, args: string[], env: NodeJS.ProcessEnv = {}): Proc => {
      const child = spawn(process.execPath, [...cli, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, ...env },
      });
      const p: Proc = { name, child, out: '', exit: new Promise((res) => child.on('exit', (code) => res(code))) };
      child.stdout!.on('data', (d: Buffer) => (p.out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (p.out += d.toString()));
      procs.push(p);
      return p;
    };
    const dump = () => procs.map((p) => `--- ${p.name}\n${p.out.slice(-2500)}`).join('\n');
    const q = async (sql: string, params: unknown[] = []) =>
      (await db.query(sql, params)).rows as Record<string, unknown>[];
    const version = async () =>
      Number((await q('SELECT COALESCE(MAX(version), 0) AS v FROM checkpoints WHERE run_id = $1', [RUN]))[0]!.v);
    const until = async (what: string, cond: () => Promise<boolean>, ms = 120_000) => {
      const end = Date.now() + ms;
      while (!(await cond())) {
        if (Date.now() > end) assert.fail(`timed out waiting for ${what}\n${dump()}`);
        await sleep(50);
      }
    };
    /** SIGSTOP the explorer right after it logs the start of a job that it has not acked 300 ms later. */
    const pauseMidRollout = async (p: Proc): Promise<{ job: string; version: number }> => {
      for (let attempt = 1; ; attempt++) {
        assert.ok(attempt <= 20, `${p.name}: never paused mid-rollout\n${dump()}`);
        const from = p.out.length;
        const hit = await new Promise<{ job: string; version: number }>((res) => {
          const onData = () => {
            const m = /generating: job (\S+) with v(\d+)/.exec(p.out.slice(from));
            if (!m) return;
            p.child.kill('SIGSTOP');
            p.child.stderr!.off('data', onData);
            res({ job: m[1]!, version: Number(m[2]) });
          };
          p.child.stderr!.on('data', onData);
        });
        await sleep(300);
        const acked = await q(
          `SELECT 1 FROM rft_jobs WHERE run_id = $1 AND id = $2 AND state = 'done' AND acked_by LIKE $3`,
          [RUN, hit.job, `explorer@%:${p.child.pid}-%`],
        );
        if (!acked.length) return hit;
        p.child.kill('SIGCONT');
        await sleep(500);
      }
    };
    try {
      const cfgFile = join(dir, 'run.yaml');
      writeFileSync(
        cfgFile,
        stringify({
          name: 'paused',
          seed: 7,
          model: { size: 'tiny-0.4m', max_seq_len: 32 },
          tokenizer: { kind: 'char' },
          taskset: { builtin: 'reverse', size: 60 },
          eval: { builtin: 'reverse', size: 4, split: 'eval' },
          workflow: { name: 'single_turn', reward: 'exact_match' },
          explorer: {
            tasks_per_step: TPS,
            repeat_times: REPEAT,
            sampling: { max_new_tokens: 8 },
            eval_sampling: { max_new_tokens: 4 },
          },
          trainer: { batch_size: TPS * REPEAT, steps: STEPS },
          algorithm: { name: 'grpo' },
          buffer: { storage: 'postgres', max_staleness: S },
          placement: 'checkpoint',
          synchronizer: { sync_interval: 1, sync_offset: 1 },
        }),
      );
      const coord = start('coordinator', [
        'coordinator',
        cfgFile,
        '--buffer',
        url,
        '--run',
        RUN,
        '--weights',
        join(dir, 'weights'),
      ]);
      assert.equal(await coord.exit, 0, dump());
      await db.connect();
      const trainer = start('trainer', ['trainer', '--buffer', url, '--run', RUN]);
      const debug = { RFT_LOG_LEVEL: 'debug' };
      const e1 = start(
        'explorer 1 (batch 5, lease 2 s)',
        ['explorer', '--buffer', url, '--run', RUN, '--batch', '5', '--lease-ms', '2000'],
        debug,
      );
      const e2 = start('explorer 2', ['explorer', '--buffer', url, '--run', RUN, '--lease-ms', '2000']);
      const e3 = start(
        'explorer 3 (lease 60 s)',
        ['explorer', '--buffer', url, '--run', RUN, '--lease-ms', '60000'],
        debug,
      );
      await until('version 3', async () => (await version()) >= 3);

      // A. Pause explorer 1 in its first job of a batch; wait until others have done everything it held.
      const a = await pauseMidRollout(e1);
      const held = (
        await q(`SELECT id FROM rft_jobs WHERE run_id = $1 AND state = 'leased' AND lease_owner LIKE $2`, [
          RUN,
          `explorer@%:${e1.child.pid}-%`,
        ])
      ).map((r) => String(r.id));
      assert.ok(held.includes(a.job), `paused in ${a.job} but holds ${held}`);
      t.diagnostic(`A: explorer 1 paused in job ${a.job}, holding ${held.length} lease(s): ${held.join(' ')}`);
      await until("the paused explorer's jobs to be done by others", async () => {
        const rows = await q(`SELECT id, state, acked_by FROM rft_jobs WHERE run_id = $1 AND id = ANY($2)`, [
          RUN,
          held,
        ]);
        return rows.every((r) => r.state === 'done' && !String(r.acked_by).includes(`:${e1.child.pid}-`));
      });
      e1.child.kill('SIGCONT');

      // B. Pause explorer 3 mid-rollout; the trainer moves on more than max_staleness versions.
      const b = await pauseMidRollout(e3);
      t.diagnostic(`B: explorer 3 paused in job ${b.job} with v${b.version}`);
      await until(`version ${b.version + S + 1}`, async () => (await version()) >= b.version + S + 1);
      const leaseLive = await q(
        `SELECT 1 FROM rft_jobs WHERE run_id = $1 AND id = $2 AND state = 'leased' AND lease_owner LIKE $3 AND lease_until > extract(epoch from clock_timestamp()) * 1000`,
        [RUN, b.job, `explorer@%:${e3.child.pid}-%`],
      );
      assert.equal(
        leaseLive.length,
        1,
        'explorer 3 still holds a live lease on its job (so only staleness can refuse it)',
      );
      e3.child.kill('SIGCONT');

      assert.equal(await trainer.exit, 0, dump());
      for (const e of [e1, e2, e3]) assert.equal(await e.exit, 0, dump());
      const result = (p: Proc) =>
        JSON.parse(p.out.split('\n').find((l) => l.includes('"explorer_result"'))!) as {
          worker: string;
          refused: { lease_lost: number; stale: number };
          dropped: { lease_lost: number; stale: number };
        };
      const r1 = result(e1);
      const r3 = result(e3);
      t.diagnostic(
        `explorer 1: refused ${JSON.stringify(r1.refused)}, dropped ${JSON.stringify(r1.dropped)}; explorer 3: refused ${JSON.stringify(r3.refused)}`,
      );
      // At least: a loaded machine can make a 2 s lease run out in normal work too (then more are counted).
      assert.ok(r1.refused.lease_lost >= 1, 'the job in progress when paused was refused at its ack');
      assert.ok(r1.dropped.lease_lost >= held.length - 1, 'the other leases were dropped before their rollout');
      assert.ok(r3.refused.stale >= 1, 'the rollout that went stale while paused was refused as stale');

      // Nothing of theirs landed: every done job has exactly its group, from its acking worker and attempt.
      const jobs = await q(`SELECT id, state, attempts, acked_by FROM rft_jobs WHERE run_id = $1`, [RUN]);
      const exps = await q(`SELECT extra FROM experiences WHERE run_id = $1 AND source = 'usual'`, [RUN]);
      const byJob = new Map<string, { worker: string; attempt: number }[]>();
      for (const e of exps) {
        const m = (JSON.parse(String(e.extra)) as { metadata: { job: string; worker: string; attempt: number } })
          .metadata;
        byJob.set(m.job, [...(byJob.get(m.job) ?? []), { worker: m.worker, attempt: m.attempt }]);
      }
      for (const j of jobs) {
        const got = byJob.get(String(j.id)) ?? [];
        if (j.state !== 'done') {
          assert.equal(got.length, 0, `job ${j.id} (${j.state}) has experiences`);
          continue;
        }
        assert.equal(got.length, REPEAT, `job ${j.id}: ${got.length} experiences`);
        for (const g of got)
          assert.deepEqual(g, { worker: String(j.acked_by), attempt: Number(j.attempts) }, `job ${j.id}`);
      }
      for (const id of held) assert.notEqual(jobs.find((j) => j.id === id)!.acked_by, r1.worker);
      const bj = jobs.find((j) => j.id === b.job)!;
      assert.ok(
        bj.acked_by !== r3.worker || bj.state !== 'done' || Number(bj.attempts) > 1,
        `job ${b.job}: the stale rollout landed`,
      );
    } finally {
      for (const p of procs) {
        if (p.child.exitCode !== null) continue;
        p.child.kill('SIGCONT');
        p.child.kill('SIGKILL');
      }
      await db.end().catch(() => undefined);
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
