// Issue 40 items 13 and 15, across hosts. (13) A second trainer on another machine with the same
// hostname used to take the live lease at once: the "holder gone" check matched the hostname and then
// looked the holder's pid up locally, where it does not exist. Host 1 here has the same hostname and
// its own pid namespace (`unshare --pid`), as another machine would. (15) A run whose trainer was
// killed: explorers waited `no job planned yet` forever and `rft status` said `trainer none`. Now
// `rft status` names the lost trainer and an explorer exits 3 after its --trainer-wait.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import { stringify } from 'yaml';
import { cliCommand } from '../../backend/coordinator/processes.js';
import { makeHosts } from './hosts.js';
import { startCluster } from './pg-cluster.js';

const RUN = 'lost1';

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
    // 'close': after its output is all read (its last lines are checked)
    exit: new Promise((res) => child.on('close', (code, sig) => res(sig === 'SIGKILL' ? -9 : code))),
  };
  child.stdout?.on('data', (b: Buffer) => (p.out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (p.out += b.toString()));
  return p;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test(
  'a second trainer on a same-named host is refused while the first renews; a killed trainer is named lost by rft status and its explorer exits 3 after --trainer-wait',
  { timeout: 240_000 },
  async (t) => {
    if (spawnSync('unshare', ['--pid', '--fork', 'true']).status !== 0)
      return t.skip('unshare --pid not possible here');
    const hosts = makeHosts(3);
    const cluster = startCluster(hosts.serverAddr, hosts.subnet);
    if ('skip' in cluster) {
      hosts.teardown();
      return t.skip(cluster.skip);
    }
    t.diagnostic(`hosts: ${hosts.mode}`);
    const dir = mkdtempSync(join(tmpdir(), 'rft-lost-'));
    const remote = cluster.url(hosts.serverAddr) + '?schema=lost';
    const procs: Proc[] = [];
    const db = new pg.Pool({ connectionString: cluster.url('127.0.0.1'), options: '-c search_path=lost', max: 2 });
    db.on('error', () => undefined);
    const q = async (sql: string, p: unknown[] = []) => (await db.query(sql, p)).rows as Record<string, unknown>[];
    const deadline = Date.now() + 200_000;
    const until = async (what: string, cond: () => Promise<boolean> | boolean) => {
      while (!(await cond())) {
        if (Date.now() > deadline)
          assert.fail(`never: ${what}\n${procs.map((p) => `--- ${p.name}\n${p.out.slice(-1500)}`).join('\n')}`);
        await sleep(100);
      }
    };
    try {
      const cfgFile = join(dir, 'run.yaml');
      // Long enough that the trainer is still training when it is killed.
      writeFileSync(
        cfgFile,
        stringify({
          name: 'lost',
          seed: 3,
          model: { size: 'tiny-0.4m', max_seq_len: 32 },
          tokenizer: { kind: 'char' },
          taskset: { builtin: 'reverse', size: 60 },
          workflow: { name: 'single_turn', reward: 'exact_match' },
          explorer: { tasks_per_step: 2, repeat_times: 4, sampling: { max_new_tokens: 4 } },
          trainer: { batch_size: 8, steps: 2000 },
          algorithm: { name: 'grpo' },
          buffer: { storage: 'postgres', max_staleness: 2 },
          placement: 'checkpoint',
          synchronizer: { sync_interval: 1, sync_offset: 1 },
        }),
      );
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
      const explorer = track(
        'explorer',
        hosts.spawn(
          2,
          process.execPath,
          [...cli, 'explorer', '--buffer', remote, '--run', RUN, '--trainer-wait', '20'],
          { ...process.env, RFT_LOG_LEVEL: 'info' },
        ), // info: its wait lines
      );
      procs.push(trainer, explorer);
      const version = async () =>
        Number((await q('SELECT COALESCE(MAX(version), 0) AS v FROM checkpoints WHERE run_id = $1', [RUN]))[0]!.v);
      await until('version 2', async () => (await version()) >= 2);

      // 13. A trainer on host 1: same hostname, another pid space. The holder's pid is unknown there.
      const second = track(
        'second trainer',
        hosts.spawn(1, 'unshare', [
          '--pid',
          '--fork',
          '--kill-child',
          process.execPath,
          ...cli,
          'trainer',
          '--buffer',
          remote,
          '--run',
          RUN,
        ]),
      );
      procs.push(second);
      // It exits refused, or (the bug) takes the lease: then the epoch moves past 1 and it trains on.
      const leaseEpoch = async () =>
        Number((await q('SELECT epoch FROM rft_trainer_lease WHERE run_id = $1', [RUN]))[0]!.epoch);
      const code = await Promise.race([
        second.exit,
        (async () => {
          await until(
            'the second trainer to exit or take the lease',
            async () => second.child.exitCode !== null || (await leaseEpoch()) > 1,
          );
          return second.child.exitCode !== null ? second.exit : `took the lease: epoch ${await leaseEpoch()}`;
        })(),
      ]);
      assert.equal(code, 1, second.out);
      assert.match(second.out, /another trainer holds it: trainer@\S+ \(host \S+, pid \d+, epoch 1\)/);
      const lease = (await q('SELECT epoch, released FROM rft_trainer_lease WHERE run_id = $1', [RUN]))[0]!;
      assert.deepEqual([Number(lease.epoch), Number(lease.released)], [1, 0], 'the first trainer keeps its lease');
      assert.equal(trainer.child.exitCode, null, 'the first trainer trains on');
      const before = await version();
      await until('the first trainer to publish again', async () => (await version()) > before);

      // 15. kill -9 the trainer: status names it lost, the explorer gives up after its --trainer-wait.
      trainer.child.kill('SIGKILL');
      assert.equal(await trainer.exit, -9);
      const status = () => {
        const r = spawnSync(
          process.execPath,
          [...cli, 'status', '--buffer', cluster.url('127.0.0.1') + '?schema=lost'],
          {
            encoding: 'utf8',
            env: { ...process.env, RFT_LOG_LEVEL: 'warn' },
          },
        );
        return r.stdout + r.stderr;
      };
      let said = '';
      await until('rft status to name the lost trainer', () => /trainer lost/.test((said = status())));
      assert.match(
        said,
        new RegExp(
          `^${RUN}\\s+distributed waiting .* trainer lost \\d+ s ago \\(last heartbeat \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z, trainer@\\S+ on \\S+, pid ${trainer.child.pid}\\)`,
          'm',
        ),
      );
      assert.equal(await explorer.exit, 3, explorer.out.slice(-3000));
      assert.match(explorer.out, /INFO dist-explorer: waiting: trainer lost \d+ s ago \(last heartbeat /);
      t.diagnostic(`explorer's last lines:\n${explorer.out.trim().split('\n').slice(-4).join('\n')}`);
      assert.match(
        explorer.out,
        /rft explorer: trainer lost \d+ s ago \(last heartbeat [^)]*\); this explorer waited 20 s for it \(--trainer-wait\) and exits/,
      );
      const row = (await q(`SELECT state, detail FROM rft_workers WHERE run_id = $1 AND role = 'explorer'`, [RUN]))[0]!;
      assert.equal(row.state, 'stopped');
      assert.match(String(row.detail), /^trainer lost \d+ s ago/);
    } finally {
      for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await db.end().catch(() => undefined);
      cluster.stop();
      hosts.teardown();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
