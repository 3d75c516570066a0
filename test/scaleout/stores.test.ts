// Weights without the coordinator's folder, end to end with PostgreSQL:
// 1. The trainer on "another machine" than the coordinator (its own working folder; the coordinator's
//    folder moved out of sight): it starts from v0 fetched from the database by sha256, serves over
//    HTTPS (a certificate made by openssl here), explorers pin it; a trainer restarted where no
//    folder holds the newest version says what to do.
// 2. The S3 store on a real S3-compatible server on loopback (s3rver): the coordinator uploads v0,
//    the trainer publishes every version and prunes old ones there, the explorer loads from it;
//    credentials the server refuses and an endpoint that is down are errors in the explorer's row and
//    log within seconds; a trainer without credentials is refused with the variables named.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';
import { setLogSink, type LogLevel } from '../../backend/core/log.js';
import { createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { checksumDir, versionDir } from '../../backend/coordinator/distributed/weights.js';
import { S3WeightsStore } from '../../backend/coordinator/distributed/weights-s3.js';
import { s3Spec } from '../../backend/coordinator/distributed/s3-spec.js';
import { fetchFromStore } from '../../backend/coordinator/distributed/weights-store.js';
import { JobQueue } from '../../backend/buffer/queue/job-queue.js';
import { PostgresStore } from '../../backend/buffer/storage/postgres.js';
import { startPg } from '../buffer/storage-helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const root = mkdtempSync(join(tmpdir(), 'rft-stores-'));
after(() => rmSync(root, { recursive: true, force: true }));

function config(steps: number): RunConfig {
  const { config, issues } = validateRunConfig({
    name: 'stores',
    seed: 7,
    model: { size: 'tiny-0.4m', max_seq_len: 32 },
    tokenizer: { kind: 'char' },
    taskset: { builtin: 'reverse', size: 12 },
    eval: { builtin: 'reverse', size: 4, split: 'eval' },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: { tasks_per_step: 2, repeat_times: 2, sampling: { max_new_tokens: 4 } },
    trainer: { batch_size: 4, steps },
    algorithm: { name: 'grpo' },
    buffer: { storage: 'postgres', max_staleness: 1 },
    placement: 'checkpoint',
    synchronizer: { sync_interval: 1, sync_offset: 1 },
  });
  assert.ok(config, JSON.stringify(issues));
  return config;
}

const ENV_KEYS = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_ENDPOINT_URL',
  'AWS_CA_BUNDLE',
] as const;
const savedEnv = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
after(() => {
  for (const k of ENV_KEYS)
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
});

test(
  "trainer in its own folder, not the coordinator's: v0 from the database, weights over HTTPS pinned",
  { timeout: 240_000 },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const url = server.url;
    const dir = join(root, 'a');
    try {
      const coordinator = join(dir, 'coordinator-host');
      const created = await createDistributedRun(config(3), url, 'A', join(coordinator, 'weights'));
      assert.equal(created.created, true);
      // The coordinator's machine is elsewhere: its folder is out of this "machine's" sight.
      renameSync(coordinator, join(dir, 'gone'));
      const cert = spawnSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-days',
          '2',
          '-subj',
          '/CN=trainer',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
          '-keyout',
          join(dir, 't.key'),
          '-out',
          join(dir, 't.pem'),
        ],
        { encoding: 'utf8' },
      );
      assert.equal(cert.status, 0, cert.stderr);
      const tls = { cert: readFileSync(join(dir, 't.pem'), 'utf8'), key: readFileSync(join(dir, 't.key'), 'utf8') };
      const trainerDir = join(dir, 'trainer-host');
      const stop = new AbortController();
      const explorer = distributedExplorer({
        url,
        runId: 'A',
        signal: stop.signal,
        cacheDir: join(dir, 'explorer-host'),
        heartbeatMs: 300,
      });
      const tr = await distributedTrainer({
        url,
        runId: 'A',
        weightsDir: trainerDir,
        serveWeights: { host: '127.0.0.1', tls },
        outDir: join(trainerDir, 'out'),
      });
      const ex = await explorer;
      assert.equal(tr.done, true, JSON.stringify(tr));
      assert.equal(tr.startedFrom, 0);
      const store = await PostgresStore.open(url);
      try {
        const recorded = await store.listCheckpoints('A');
        // v0 landed in the trainer's own folder, the bytes the coordinator recorded.
        assert.equal(checksumDir(versionDir(trainerDir, 'A', 0)), recorded[0]!.checksum);
        assert.ok(
          recorded.slice(1).every((c) => c.path.startsWith(trainerDir)),
          "later versions are the trainer's",
        );
        const src = await store.getState<{ url: string; tls?: { sha256: string } }>('A', 'dist:weights-http');
        assert.match(src!.url, /^https:\/\/127\.0\.0\.1:\d+$/);
        assert.match(src!.tls!.sha256, /^[0-9a-f]{64}$/);
      } finally {
        await store.close();
      }
      // v0 is nowhere on the explorer's "machine" as a folder: it came over HTTPS.
      assert.ok(ex.loads.http >= 1, JSON.stringify(ex));
      assert.ok(ex.jobs > 0);
      assert.ok(existsSync(join(trainerDir, 'out', 'summary.json')));
      t.diagnostic(
        `trainer: ${tr.step} steps from v0 fetched from the database; explorer loads ${JSON.stringify(ex.loads)}, ${ex.jobs} jobs`,
      );
      // A trainer restarted on a machine that holds no folder with the newest version (no object store):
      // refused, saying where to run it or what to configure.
      renameSync(trainerDir, join(dir, 'gone-trainer'));
      await assert.rejects(
        distributedTrainer({ url, runId: 'A', weightsDir: join(dir, 'third-host'), serveWeights: false }),
        /v3 is at .*which this machine does not have: run `rft trainer` where the previous trainer ran .*--weights s3:/,
      );
      stop.abort();
    } finally {
      server.stop();
    }
  },
);

test(
  'S3 store on s3rver: v0 uploaded by the coordinator, versions published and pruned by the trainer, explorers load from it; refused and unreachable are errors',
  { timeout: 300_000 },
  async (t) => {
    const server = startPg();
    if ('skip' in server) return t.skip(server.skip);
    const url = server.url;
    const dir = join(root, 's');
    const s3 = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: join(dir, 's3data'),
      configureBuckets: [{ name: 'rft' }],
    });
    const { port } = await s3.run();
    let s3up = true;
    const lines: { level: LogLevel; scope: string; msg: string }[] = [];
    const level = process.env.RFT_LOG_LEVEL;
    process.env.RFT_LOG_LEVEL = 'info';
    setLogSink((lv, scope, msg) => void lines.push({ level: lv, scope, msg }));
    const q = await JobQueue.open(url);
    const store = await PostgresStore.open(url);
    try {
      for (const k of ENV_KEYS) delete process.env[k];
      process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
      process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
      const spec = s3Spec('s3://rft/runs', { endpoint: `http://127.0.0.1:${port}` });
      const objects = new S3WeightsStore(spec, { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' });
      const created = await createDistributedRun(config(6), url, 'S', join(dir, 'staging'), spec);
      assert.match(created.checkpoint, /^s3:\/\/rft\/runs\/S\/[0-9a-f]{64}\/$/);
      assert.equal(await store.getState('S', 'dist:weights'), null, 'no folder recorded');
      const stop = new AbortController();
      const explorer = distributedExplorer({
        url,
        runId: 'S',
        signal: stop.signal,
        cacheDir: join(dir, 'explorer-host'),
        heartbeatMs: 300,
      });
      // The first trainer stops after v2; the second starts on "another machine" (an empty folder): it
      // resumes from the newest version and the stage's start (v0, for the reference), both out of S3.
      const stop1 = new AbortController();
      const tr1 = distributedTrainer({
        url,
        runId: 'S',
        weightsDir: join(dir, 'trainer-host-1'),
        signal: stop1.signal,
      });
      while ((await store.latestCheckpoint('S'))!.version < 2) await sleep(100);
      stop1.abort();
      const r1 = await tr1;
      assert.equal(r1.done, false);
      renameSync(join(dir, 'trainer-host-1'), join(dir, 'gone-trainer-1')); // that machine is gone
      const trainerDir = join(dir, 'trainer-host-2');
      const tr = await distributedTrainer({ url, runId: 'S', weightsDir: trainerDir });
      const ex = await explorer;
      assert.equal(tr.done, true, JSON.stringify(tr));
      assert.equal(tr.startedFrom, r1.step);
      const trainerLines = lines.filter((l) => l.scope === 'dist-trainer').map((l) => l.msg);
      assert.ok(
        trainerLines.some((m) => m === `run S: fetching v${r1.step} from ${objects.where}`),
        trainerLines.join('\n'),
      );
      assert.ok(
        trainerLines.some((m) => m === `run S: fetching v0 from ${objects.where}`),
        'the stage start, for the reference',
      );
      assert.ok(!trainerLines.some((m) => /the reference is the current weights/.test(m)));
      t.diagnostic(
        `trainer 1 stopped at v${r1.step}; trainer 2 in an empty folder resumed from S3 and finished at v${tr.step}`,
      );
      assert.equal(
        await store.getState('S', 'dist:weights-http'),
        null,
        'with an object store the trainer serves nothing',
      );
      assert.ok(ex.loads.s3 >= 1, `v0 came from S3: ${JSON.stringify(ex.loads)}`);
      assert.equal(ex.loads.http, 0);
      // In the store: v0 and the newest max_staleness + 3 versions; older ones pruned.
      const recorded = await store.listCheckpoints('S');
      assert.equal(recorded.at(-1)!.version, 6);
      const inStore: number[] = [];
      for (const c of recorded) {
        try {
          const got = await fetchFromStore(objects, 'S', c.checksum, join(dir, 'check', String(c.version)));
          assert.equal(checksumDir(got), c.checksum);
          inStore.push(c.version);
        } catch (e) {
          assert.match((e as Error).message, /HTTP 404/);
        }
      }
      t.diagnostic(`versions in S3 after the run: ${inStore.join(', ')}; explorer loads ${JSON.stringify(ex.loads)}`);
      assert.deepEqual(inStore, [0, 3, 4, 5, 6]);

      // A second run; this explorer's credentials are refused by the server: an error within seconds.
      await createDistributedRun(config(2), url, 'S2', join(dir, 'staging2'), spec);
      const errorRow = async (what: string) => {
        const t0 = Date.now();
        const stop2 = new AbortController();
        const run = distributedExplorer({
          url,
          runId: 'S2',
          signal: stop2.signal,
          cacheDir: join(dir, 'x-' + what),
          heartbeatMs: 200,
        });
        let row;
        for (;;) {
          row = (await q.workers('S2')).find((w) => w.role === 'explorer' && w.state === 'error');
          if (row) break;
          assert.ok(
            Date.now() - t0 < 60_000,
            `${what}: no error state after 60 s: ${JSON.stringify(await q.workers('S2'))}`,
          );
          await sleep(100);
        }
        const s = (Date.now() - t0) / 1000;
        stop2.abort();
        await run;
        await q.pool.query(`DELETE FROM rft_workers WHERE run_id = 'S2'`);
        t.diagnostic(`${what}: explorer row in state 'error' after ${s.toFixed(1)} s: ${row.detail}`);
        return String(row.detail);
      };
      process.env.AWS_ACCESS_KEY_ID = 'NOT-A-KEY';
      assert.match(
        await errorRow('forbidden'),
        /weights v0: s3:\/\/rft\/runs\/S2\/[0-9a-f]{64}\/manifest\.json .*HTTP 403 InvalidAccessKeyId \(credentials refused/,
      );
      process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
      await s3.close();
      s3up = false;
      assert.match(await errorRow('unreachable'), /weights v0: s3:\/\/rft\/runs\/S2\/.*ECONNREFUSED/);
      assert.ok(
        lines.some((l) => l.scope === 'dist-explorer' && l.level === 'error' && /ECONNREFUSED/.test(l.msg)),
        "the error is in the explorer's log",
      );
      // Without credentials in its environment, a trainer of an S3 run is refused at once.
      delete process.env.AWS_ACCESS_KEY_ID;
      await assert.rejects(
        distributedTrainer({ url, runId: 'S2', weightsDir: join(dir, 't2') }),
        /set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/,
      );
    } finally {
      setLogSink((lv, scope, msg) => void process.stderr.write(`${lv} ${scope}: ${msg}\n`));
      if (level === undefined) delete process.env.RFT_LOG_LEVEL;
      else process.env.RFT_LOG_LEVEL = level;
      if (s3up) await s3.close();
      await q.close();
      await store.close();
      server.stop();
    }
  },
);
