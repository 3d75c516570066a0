// Scale-out on this machine: one trainer and 1, 2, 4 explorer processes against one PostgreSQL (a
// throwaway cluster from scripts/pg-test-server.sh), all on loopback. Figures: experiences trained
// per second (from the trainer's consumption records: steady state, startup excluded), the rate the
// explorers acknowledged experiences, and the trainer's idle fraction (time waiting for data).
// Usage: npm run bench -- scale [--steps N] [--explorers 1,2,4] [--size tiny-0.4m] [--tokens N]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { stringify } from 'yaml';
import { cliCommand } from '../backend/coordinator/processes.js';
import { report } from './report.js';

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
    const c = spawn(process.execPath, [...cliCommand(), ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RFT_LOG_LEVEL: 'warn' } });
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
    name: 'scale', seed: 1,
    model: { size, max_seq_len: 64 }, tokenizer: { kind: 'char' },
    taskset: { builtin: 'reverse', size: 200 }, eval: { builtin: 'reverse', size: 8, split: 'eval' },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: { tasks_per_step: TASKS, repeat_times: REPEAT, sampling: { max_new_tokens: tokens }, eval_sampling: { max_new_tokens: tokens } },
    trainer: { batch_size: TASKS * REPEAT, steps }, algorithm: { name: 'grpo' },
    buffer: { storage: 'postgres', max_staleness: 2 }, synchronizer: { method: 'checkpoint', sync_interval: 1, sync_offset: 1 },
  };
  const file = join(dir, `scale${n}.yaml`);
  writeFileSync(file, stringify(cfg));
  const c = await run(['coordinator', file, '--buffer', url, '--run', 'b', '--weights', join(dir, 'w')]);
  if (c.code !== 0) throw new Error(c.out);
  const explorers = Array.from({ length: n }, () => run(['explorer', '--buffer', url, '--run', 'b', '--batch', '1']));
  const trainer = await run(['trainer', '--buffer', url, '--run', 'b']);
  const ex = (await Promise.all(explorers)).map((e) => JSON.parse(e.out.split('\n').find((l) => l.includes('explorer_result')) ?? 'null') as { experiences: number; busyS: number } | null);
  // One explorer's rollout rate while busy: what it would give with a core (machine) of its own.
  const busy = ex.filter((e) => e && e.busyS > 0) as { experiences: number; busyS: number }[];
  const perExplorer = busy.reduce((a, e) => a + e.experiences, 0) / Math.max(1e-9, busy.reduce((a, e) => a + e.busyS, 0));
  const line = trainer.out.split('\n').find((l) => l.includes('trainer_result'));
  if (trainer.code !== 0 || !line) throw new Error(trainer.out);
  const result = JSON.parse(line) as { idle: number; wallS: number };
  const db = new pg.Client({ connectionString: base, options: `-c search_path=${schema}` });
  await db.connect();
  try {
    const at = (await db.query(`SELECT step, MIN(at) AS at FROM consumption WHERE consumer = 'trainer' GROUP BY step ORDER BY step`)).rows.map((r) => Number(r.at));
    const trained = ((at.length - 1) * TASKS * REPEAT) / ((at.at(-1)! - at[0]!) / 1000);
    const acks = (await db.query(`SELECT acked_at, experiences FROM rft_jobs WHERE run_id = 'b' AND state = 'done' ORDER BY acked_at`)).rows.map((r) => ({ at: Number(r.acked_at), n: Number(r.experiences) }));
    const acked = acks.slice(1).reduce((a, r) => a + r.n, 0) / ((acks.at(-1)!.at - acks[0]!.at) / 1000);
    return { trained, acked, idle: result.idle, wall: result.wallS, perExplorer };
  } finally {
    await db.end();
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
  for (const n of counts) {
    const r = await one(base, n, dir);
    first ??= r;
    const extra = { explorers: n, steps, size, max_new_tokens: tokens, batch: TASKS * REPEAT, cores: cpus().length, load1: Number(loadavg()[0]!.toFixed(2)) };
    const base1 = n === counts[0] ? null : `${counts[0]} explorer(s)`;
    report({ bench: 'scale', figure: `trained_experiences_per_s_${n}_explorers`, unit: 'experiences/s', value: r.trained, baseline: base1, baseline_value: base1 ? first.trained : null, ...extra });
    report({ bench: 'scale', figure: `acked_experiences_per_s_${n}_explorers`, unit: 'experiences/s', value: r.acked, baseline: base1, baseline_value: base1 ? first.acked : null, ...extra });
    report({ bench: 'scale', figure: `trainer_idle_fraction_${n}_explorers`, unit: 'fraction', value: r.idle, ...extra });
    // Predictions for more machines: the trainer, never idle, trains at most trained / (1 - idle);
    // one explorer with a machine of its own makes perExplorer; so about capacity / perExplorer
    // explorer machines keep this trainer busy, and more add nothing.
    const capacity = r.trained / Math.max(1e-9, 1 - r.idle);
    report({ bench: 'scale', figure: `explorer_busy_rate_per_process_${n}_explorers`, unit: 'experiences/s', value: r.perExplorer, ...extra });
    report({ bench: 'scale', figure: `trainer_capacity_${n}_explorers`, unit: 'experiences/s', value: capacity, ...extra });
    report({ bench: 'scale', figure: `explorer_machines_to_saturate_trainer_${n}_explorers`, unit: 'explorers', value: capacity / Math.max(1e-9, r.perExplorer), ...extra });
  }
} finally {
  spawnSync('bash', [join(root, 'scripts', 'pg-test-server.sh'), 'stop', pgDir]);
  rmSync(dir, { recursive: true, force: true });
}
