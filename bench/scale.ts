// Scale-out on this machine: one trainer and 1, 2, 4 explorer processes against one PostgreSQL (a
// throwaway cluster from scripts/pg-test-server.sh), all on loopback. Figures: experiences trained
// per second (from the trainer's consumption records: steady state, startup excluded), the rate the
// explorers acknowledged experiences, and the trainer's idle fraction (time waiting for data).
// Explorers use the default lease batch (1 job at a time).
// Then the job queue alone (no model): jobs/s it sustains with W concurrent lease+ack loops (a group
// of 8 experiences per ack), and the lease latency over a long history of done jobs, with and
// without the partial index over open jobs.
// Usage: npm run bench -- scale [--steps N] [--explorers 1,2,4] [--size tiny-0.4m] [--tokens N]
//        [--queue-workers 1,4,16] [--queue-jobs N] [--history N] [--queue-only] [--no-queue]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { stringify } from 'yaml';
import { cliCommand } from '../backend/coordinator/processes.js';
import { JobQueue, experienceId, type NewJob } from '../backend/buffer/queue/job-queue.js';
import { PostgresStore } from '../backend/buffer/storage/postgres.js';
import { Rng } from '../backend/core/rng.js';
import type { Experience, Task } from '../backend/core/types.js';
import { median, percentile, report } from './report.js';

const arg = (name: string, d: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1]! : d;
};
const steps = Number(arg('steps', '16'));
const counts = arg('explorers', '1,2,4').split(',').map(Number);
const size = arg('size', 'tiny-0.4m');
const tokens = Number(arg('tokens', '16'));
const TASKS = 4;
const REPEAT = 8;
const root = join(fileURLToPath(import.meta.url), '..', '..');

function run(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((res) => {
    const c = spawn(process.execPath, [...cliCommand(), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, RFT_LOG_LEVEL: 'warn' },
    });
    let out = '';
    c.stdout.on('data', (b: Buffer) => (out += b));
    c.stderr.on('data', (b: Buffer) => (out += b));
    c.on('exit', (code) => res({ code, out }));
  });
}

async function one(base: string, n: number, dir: string) {
  const schema = `scale${n}`;
  const url = `${base}?schema=${schema}`;
  const cfg = {
    name: 'scale',
    seed: 1,
    model: { size, max_seq_len: 64 },
    tokenizer: { kind: 'char' },
    taskset: { builtin: 'reverse', size: 200 },
    eval: { builtin: 'reverse', size: 8, split: 'eval' },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: {
      tasks_per_step: TASKS,
      repeat_times: REPEAT,
      sampling: { max_new_tokens: tokens },
      eval_sampling: { max_new_tokens: tokens },
    },
    trainer: { batch_size: TASKS * REPEAT, steps },
    algorithm: { name: 'grpo' },
    buffer: { storage: 'postgres', max_staleness: 2 },
    placement: 'checkpoint',
    synchronizer: { sync_interval: 1, sync_offset: 1 },
  };
  const file = join(dir, `scale${n}.yaml`);
  writeFileSync(file, stringify(cfg));
  const c = await run(['coordinator', file, '--buffer', url, '--run', 'b', '--weights', join(dir, 'w')]);
  if (c.code !== 0) throw new Error(c.out);
  const explorers = Array.from({ length: n }, () => run(['explorer', '--buffer', url, '--run', 'b']));
  const trainer = await run(['trainer', '--buffer', url, '--run', 'b']);
  const ex = (await Promise.all(explorers)).map(
    (e) =>
      JSON.parse(e.out.split('\n').find((l) => l.includes('explorer_result')) ?? 'null') as {
        experiences: number;
        busyS: number;
      } | null,
  );
  // One explorer's rollout rate while busy: what it would give with a core (machine) of its own.
  const busy = ex.filter((e) => e && e.busyS > 0) as { experiences: number; busyS: number }[];
  const perExplorer =
    busy.reduce((a, e) => a + e.experiences, 0) /
    Math.max(
      1e-9,
      busy.reduce((a, e) => a + e.busyS, 0),
    );
  const line = trainer.out.split('\n').find((l) => l.includes('trainer_result'));
  if (trainer.code !== 0 || !line) throw new Error(trainer.out);
  const result = JSON.parse(line) as { idle: number; wallS: number };
  const db = new pg.Client({ connectionString: base, options: `-c search_path=${schema}` });
  await db.connect();
  try {
    const at = (
      await db.query(
        `SELECT step, MIN(at) AS at FROM consumption WHERE run_id = 'b' AND consumer = 'trainer' GROUP BY step ORDER BY step`,
      )
    ).rows.map((r) => Number(r.at));
    const trained = ((at.length - 1) * TASKS * REPEAT) / ((at.at(-1)! - at[0]!) / 1000);
    const acks = (
      await db.query(
        `SELECT acked_at, experiences FROM rft_jobs WHERE run_id = 'b' AND state = 'done' ORDER BY acked_at`,
      )
    ).rows.map((r) => ({ at: Number(r.acked_at), n: Number(r.experiences) }));
    const acked = acks.slice(1).reduce((a, r) => a + r.n, 0) / ((acks.at(-1)!.at - acks[0]!.at) / 1000);
    return { trained, acked, idle: result.idle, wall: result.wallS, perExplorer };
  } finally {
    await db.end();
  }
}

const flag = (name: string) => process.argv.includes(`--${name}`);
const task: Task = { id: 'q', taskset: 'bench', prompt: 'reverse: abc' } as Task;

function group(run: string, job: string, version: number, rng: Rng): Experience[] {
  return Array.from({ length: 8 }, (_, i) => {
    const responseTokens = Array.from({ length: 24 }, () => rng.int(3, 200));
    return {
      id: experienceId(run, job, i),
      taskId: 'q',
      groupId: `${run}:job:${job}`,
      runId: run,
      source: 'usual',
      promptTokens: Array.from({ length: 16 }, () => rng.int(3, 200)),
      promptText: 'reverse: abc',
      responseTokens,
      responseText: 'cba',
      actionMask: responseTokens.map(() => 1),
      logprobs: responseTokens.map(() => Math.fround(-rng.next() * 4)),
      modelVersion: version,
      reward: rng.next(),
      status: 'ok',
      useCount: 0,
      createdAt: Date.now(),
      metadata: { job },
    } as Experience;
  });
}

/** The queue without a model: W lease(1)+ack loops, each with its own connection pool (a process each). */
async function queueThroughput(base: string, workers: number, jobs: number): Promise<number> {
  const url = `${base}?schema=queue_w${workers}`;
  const store = await PostgresStore.open(url);
  const qs = await Promise.all(Array.from({ length: workers }, () => JobQueue.open(url, { poolSize: 2 })));
  try {
    const all: NewJob[] = Array.from({ length: jobs }, (_, k) => ({
      id: `0:${k}`,
      target: 0,
      requiredVersion: 0,
      task,
    }));
    await qs[0]!.addJobs('b', all);
    const t0 = performance.now();
    await Promise.all(
      qs.map(async (q, w) => {
        const rng = new Rng(w + 1);
        for (;;) {
          const [j] = await q.lease('b', `w${w}`, 0, 1, 60_000);
          if (!j) return;
          const r = await q.ack('b', j, `w${w}`, 0, 2, group('b', j.id, 0, rng));
          if (!r.ok) throw new Error(`ack refused: ${r.reason}`);
        }
      }),
    );
    const s = (performance.now() - t0) / 1000;
    const done = (await qs[0]!.counts('b')).done ?? 0;
    if (done !== jobs) throw new Error(`${done} of ${jobs} jobs done`);
    return jobs / s;
  } finally {
    await Promise.all(qs.map((q) => q.close()));
    await store.close();
  }
}

/**
 * Lease latency (the lease of 1 job; then released) with `history` done jobs in the run: with the
 * shipped indexes, without the partial index over open jobs (rft_jobs_pick, which leads with state,
 * is left), and with neither.
 */
async function leaseLatency(
  base: string,
  history: number,
): Promise<{ withIndex: number[]; without: number[]; pkOnly: number[]; plans: string[] }> {
  const schema = 'queue_hist';
  const url = `${base}?schema=${schema}`;
  const store = await PostgresStore.open(url);
  const q = await JobQueue.open(url);
  const db = new pg.Client({ connectionString: base, options: `-c search_path=${schema}` });
  await db.connect();
  try {
    await db.query(
      `INSERT INTO rft_jobs (run_id, id, target, required_version, task, state, attempts, acked_by, acked_version, acked_at, experiences)
      SELECT 'b', 'h' || g, g / 8, 0, '{}', 'done', 1, 'w', 0, 0, 8 FROM generate_series(1, $1) g`,
      [history],
    );
    await q.addJobs(
      'b',
      Array.from({ length: 64 }, (_, k) => ({ id: `n:${k}`, target: history, requiredVersion: 0, task })),
    );
    const measure = async () => {
      await db.query('ANALYZE rft_jobs');
      const ms: number[] = [];
      for (let i = 0; i < 300; i++) {
        const t0 = performance.now();
        const [j] = await q.lease('b', 'w', history, 1, 60_000);
        ms.push(performance.now() - t0);
        await q.release('b', j!, 'w');
      }
      return ms.slice(20); // warm
    };
    const plan = async () => {
      const r = await db.query(
        `EXPLAIN SELECT id FROM rft_jobs WHERE run_id = 'b' AND state <> 'done' AND required_version <= 1 AND (state = 'queued' OR (state = 'leased' AND lease_until < 0)) ORDER BY target, seq LIMIT 1 FOR UPDATE SKIP LOCKED`,
      );
      return r.rows.map((x: Record<string, string>) => x['QUERY PLAN']).join(' | ');
    };
    // Alternated three times, so neither variant always gets the cold first round.
    const withIndex: number[] = [];
    const without: number[] = [];
    const OPEN_INDEX = `CREATE INDEX rft_jobs_open ON rft_jobs (run_id, target, seq) WHERE state <> 'done'`;
    const plans = ['', ''];
    for (let round = 0; round < 3; round++) {
      withIndex.push(...(await measure()));
      plans[0] = await plan();
      await db.query('DROP INDEX rft_jobs_open');
      without.push(...(await measure()));
      plans[1] = await plan();
      if (round < 2) await db.query(OPEN_INDEX);
    }
    // Neither index (the primary key only): what a long history costs a lease without them.
    await db.query('DROP INDEX rft_jobs_pick');
    const pkOnly = await measure();
    plans.push(await plan());
    return { withIndex, without, pkOnly, plans };
  } finally {
    await db.end();
    await q.close();
    await store.close();
  }
}

const pgStart = spawnSync('bash', [join(root, 'scripts', 'pg-test-server.sh'), 'start'], { encoding: 'utf8' });
if (pgStart.status !== 0) {
  console.error(`bench scale: PostgreSQL did not start: ${pgStart.stderr}`);
  process.exit(1);
}
const [base, pgDir] = pgStart.stdout.trim().split('\n') as [string, string];
const dir = mkdtempSync(join(tmpdir(), 'rft-bench-scale-'));
try {
  let first: { trained: number; acked: number } | null = null;
  for (const n of flag('queue-only') ? [] : counts) {
    const r = await one(base, n, dir);
    first ??= r;
    const extra = {
      explorers: n,
      steps,
      size,
      max_new_tokens: tokens,
      batch: TASKS * REPEAT,
      cores: cpus().length,
      load1: Number(loadavg()[0]!.toFixed(2)),
    };
    const base1 = n === counts[0] ? null : `${counts[0]} explorer(s)`;
    report({
      bench: 'scale',
      figure: `trained_experiences_per_s_${n}_explorers`,
      unit: 'experiences/s',
      value: r.trained,
      baseline: base1,
      baseline_value: base1 ? first.trained : null,
      ...extra,
    });
    report({
      bench: 'scale',
      figure: `acked_experiences_per_s_${n}_explorers`,
      unit: 'experiences/s',
      value: r.acked,
      baseline: base1,
      baseline_value: base1 ? first.acked : null,
      ...extra,
    });
    report({
      bench: 'scale',
      figure: `trainer_idle_fraction_${n}_explorers`,
      unit: 'fraction',
      value: r.idle,
      ...extra,
    });
    // Predictions for more machines: the trainer, never idle, trains at most trained / (1 - idle);
    // one explorer with a machine of its own makes perExplorer; so about capacity / perExplorer
    // explorer machines keep this trainer busy, and more add nothing.
    const capacity = r.trained / Math.max(1e-9, 1 - r.idle);
    report({
      bench: 'scale',
      figure: `explorer_busy_rate_per_process_${n}_explorers`,
      unit: 'experiences/s',
      value: r.perExplorer,
      ...extra,
    });
    report({
      bench: 'scale',
      figure: `trainer_capacity_${n}_explorers`,
      unit: 'experiences/s',
      value: capacity,
      ...extra,
    });
    report({
      bench: 'scale',
      figure: `explorer_machines_to_saturate_trainer_${n}_explorers`,
      unit: 'explorers',
      value: capacity / Math.max(1e-9, r.perExplorer),
      ...extra,
    });
  }
  if (!flag('no-queue')) {
    const cores = cpus().length;
    const qJobs = Number(arg('queue-jobs', '2000'));
    let one1: number | null = null;
    for (const w of arg('queue-workers', '1,4,16').split(',').map(Number)) {
      const rate = await queueThroughput(base, w, qJobs);
      one1 ??= rate;
      const b1 = one1 === rate ? null : '1 worker';
      report({
        bench: 'scale',
        figure: `queue_jobs_per_s_${w}_workers`,
        unit: 'jobs/s',
        value: rate,
        baseline: b1,
        baseline_value: b1 ? one1 : null,
        workers: w,
        jobs: qJobs,
        group: 8,
        cores,
        load1: Number(loadavg()[0]!.toFixed(2)),
      });
    }
    const history = Number(arg('history', '200000'));
    const l = await leaseLatency(base, history);
    const extra = {
      done_jobs_in_history: history,
      samples: l.withIndex.length,
      cores,
      load1: Number(loadavg()[0]!.toFixed(2)),
    };
    report({
      bench: 'scale',
      figure: 'lease_ms_median_partial_index',
      unit: 'ms',
      value: median(l.withIndex),
      baseline: 'without the partial index',
      baseline_value: median(l.without),
      ratio: median(l.without) / median(l.withIndex),
      p95: percentile(l.withIndex, 95),
      plan: l.plans[0],
      ...extra,
    });
    report({
      bench: 'scale',
      figure: 'lease_ms_median_without_partial_index',
      unit: 'ms',
      value: median(l.without),
      p95: percentile(l.without, 95),
      plan: l.plans[1],
      ...extra,
    });
    report({
      bench: 'scale',
      figure: 'lease_ms_median_primary_key_only',
      unit: 'ms',
      value: median(l.pkOnly),
      p95: percentile(l.pkOnly, 95),
      plan: l.plans[2],
      ...extra,
    });
  }
} finally {
  spawnSync('bash', [join(root, 'scripts', 'pg-test-server.sh'), 'stop', pgDir]);
  rmSync(dir, { recursive: true, force: true });
}
