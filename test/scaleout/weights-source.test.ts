// An explorer on a machine that does not see the trainer's weights folder. While the recorded HTTP
// source is unreachable it must say so, as an error in its log and in its worker row (what `rft
// workers` and the coordinator show) within seconds, without filling the log while it waits; once
// the source is up it fetches v0 over HTTP, verifies it and works. Also: `rft workers` on an unknown
// run exits non-zero, and waiting does not pile abort listeners onto the run's signal.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateRunConfig } from '../../backend/core/config.js';
import { setLogSink, type LogLevel } from '../../backend/core/log.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { WeightsServer } from '../../backend/coordinator/distributed/weights-http.js';
import { JobQueue } from '../../backend/buffer/queue/job-queue.js';
import { PostgresStore } from '../../backend/buffer/storage/postgres.js';
import { cliCommand } from '../../backend/coordinator/processes.js';
import { startPg } from '../buffer/storage-helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

test(
  'an unreachable weight source is an error in the log and the worker row within seconds; then HTTP fetch works',
  { timeout: 180_000 },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const dir = mkdtempSync(join(tmpdir(), 'rft-wsrc-'));
    const url = server.url;
    const lines: { level: LogLevel; scope: string; msg: string; at: number }[] = [];
    const level = process.env.RFT_LOG_LEVEL;
    process.env.RFT_LOG_LEVEL = 'info';
    setLogSink((lv, scope, msg) => void lines.push({ level: lv, scope, msg, at: Date.now() }));
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    const q = await JobQueue.open(url);
    const store = await PostgresStore.open(url);
    const stop = new AbortController();
    let weightsServer: WeightsServer | null = null;
    try {
      const { config, issues } = validateRunConfig({
        name: 'wsrc',
        seed: 5,
        model: { size: 'tiny-0.4m', max_seq_len: 32 },
        tokenizer: { kind: 'char' },
        taskset: { builtin: 'reverse', size: 12 },
        eval: { builtin: 'reverse', size: 4, split: 'eval' },
        workflow: { name: 'single_turn', reward: 'exact_match' },
        explorer: { tasks_per_step: 2, repeat_times: 2, sampling: { max_new_tokens: 4 } },
        trainer: { batch_size: 4, steps: 3 },
        algorithm: { name: 'grpo' },
        buffer: { storage: 'postgres', max_staleness: 1 },
        placement: 'checkpoint',
        synchronizer: { sync_interval: 1, sync_offset: 1 },
      });
      assert.ok(config, JSON.stringify(issues));
      const weights = join(dir, 'weights');
      await createDistributedRun(config, url, 'W', weights);
      // This "machine" does not see the trainer's folder; the recorded source is a port nobody listens on.
      const hidden = join(dir, 'trainer-host-only');
      renameSync(weights, hidden);
      const dead = `http://127.0.0.1:${await freePort()}`;
      await store.setState('W', 'dist:weights-http', { url: dead, token: 'x' });

      const t0 = Date.now();
      const run = distributedExplorer({
        url,
        runId: 'W',
        signal: stop.signal,
        heartbeatMs: 200,
        cacheDir: join(dir, 'cache'),
      });
      let row;
      for (;;) {
        row = (await q.workers('W')).find((w) => w.role === 'explorer');
        if (row?.state === 'error') break;
        assert.ok(Date.now() - t0 < 60_000, `no error state after 60 s: ${JSON.stringify(row)}`);
        await sleep(100);
      }
      const errorAfter = (Date.now() - t0) / 1000;
      t.diagnostic(`explorer row in state 'error' after ${errorAfter.toFixed(1)} s: ${row.detail}`);
      assert.match(String(row.detail), /weights v0: .*127\.0\.0\.1.*ECONNREFUSED/);
      assert.match(String(row.detail), /not visible|ECONNREFUSED/);
      const errLine = lines.find((l) => l.scope === 'dist-explorer' && l.level === 'error');
      assert.ok(errLine, `no error line in the explorer's log: ${JSON.stringify(lines)}`);
      assert.match(errLine.msg, /ECONNREFUSED/);
      // Waiting on a dead source: no line per attempt (it retries every second).
      await sleep(5000);
      const during = lines.filter((l) => l.scope === 'dist-explorer' && l.at > errLine.at);
      assert.ok(
        during.length <= 1,
        `${during.length} log lines in 5 s of waiting: ${during.map((l) => l.msg).join(' | ')}`,
      );
      const rft = (args: string[]) =>
        spawnSync(process.execPath, [...cliCommand(), ...args], {
          encoding: 'utf8',
          env: { ...process.env, RFT_LOG_LEVEL: 'warn' },
        });
      const listed = rft(['workers', '--buffer', url, '--run', 'W']);
      assert.equal(listed.status, 0, listed.stderr);
      assert.match(listed.stdout, /error/, 'rft workers shows the error state');
      assert.match(listed.stdout, /ECONNREFUSED/, 'and why');

      // The trainer's host comes up: serving the hidden folder over HTTP, recorded as the run's source.
      weightsServer = new WeightsServer();
      const v0 = (await store.listCheckpoints('W'))[0]!;
      weightsServer.add(v0.checksum, join(hidden, 'W', 'v0'));
      const port = await weightsServer.listen(0, '127.0.0.1');
      await store.setState('W', 'dist:weights-http', { url: `http://127.0.0.1:${port}`, token: weightsServer.token });
      for (;;) {
        const c = await q.counts('W');
        if ((c.done ?? 0) >= 4) break; // the jobs v0 may run: steps 0 and 1 (sync_offset 1), 2 each
        assert.ok(
          Date.now() - t0 < 120_000,
          `v0's jobs not done: ${JSON.stringify(c)} ${JSON.stringify(await q.workers('W'))}`,
        );
        await sleep(200);
      }
      await sleep(4000); // idle: "no job for v0", waited out in 300 ms sleeps on the run's signal
      stop.abort();
      const res = await run;
      assert.equal(res.loads.http, 1, JSON.stringify(res));
      assert.equal(res.loads.folder, 0);
      assert.equal(res.jobs, 4);
      assert.deepEqual(
        warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')),
        [],
      );

      const nope = rft(['workers', '--buffer', url, '--run', 'NOPE']);
      assert.equal(nope.status, 1, nope.stdout + nope.stderr);
      assert.match(nope.stderr, /no distributed run 'NOPE'/);
    } finally {
      stop.abort();
      setLogSink((lv, scope, msg) => void process.stderr.write(`${lv} ${scope}: ${msg}\n`));
      if (level === undefined) delete process.env.RFT_LOG_LEVEL;
      else process.env.RFT_LOG_LEVEL = level;
      process.off('warning', onWarning);
      await weightsServer?.close();
      await q.close();
      await store.close();
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
