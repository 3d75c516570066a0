// `npm run bench -- buffer`: buffer storage speed on SQLite and PostgreSQL.
//  - experiences written per second, batches of 64 realistic (~2 KB stored) experiences, each batch one durable commit
//  - sample latency p50 / p99 for each sampler (fifo, priority, expert, mixed), batch of 16
//  - bytes per experience of the array blob beside JSON text (why the arrays are stored as a blob)
// PostgreSQL figures carry the SQLite figure as their baseline. PostgreSQL: RFT_TEST_PG_URL, or a throwaway
// server from scripts/pg-test-server.sh. Env: BENCH_BATCHES (default 100), BENCH_TAKES (default 200).
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng } from '../backend/core/rng.js';
import type { Experience } from '../backend/core/types.js';
import { encodeArrays } from '../backend/buffer/storage/codec.js';
import { openStore } from '../backend/buffer/storage/registry.js';
import type { ExperienceStore } from '../backend/buffer/storage/types.js';
import { makeSampler } from '../backend/buffer/sampler/registry.js';
import { percentile, report } from './report.js';

const BATCHES = Number(process.env.BENCH_BATCHES ?? 100);
const TAKES = Number(process.env.BENCH_TAKES ?? 200);
const B = 16;
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function experience(i: number, rng: Rng, source: 'usual' | 'expert' = 'usual'): Experience {
  const P = 96;
  const R = 160;
  const responseTokens = Array.from({ length: R }, () => rng.int(3, 32000));
  return {
    id: `${source}-${i}`,
    taskId: `task-${i % 500}`,
    groupId: `g-${i >> 3}`,
    runId: 'bench',
    source,
    promptTokens: Array.from({ length: P }, () => rng.int(3, 32000)),
    promptText: 'Solve: what is the sum of the first n odd numbers for n = ' + i + '? Show the steps. ',
    responseTokens,
    responseText: 'The first n odd numbers sum to n squared, so the answer is ' + i * i + '. '.repeat(3),
    actionMask: responseTokens.map(() => 1),
    logprobs: source === 'expert' ? [] : responseTokens.map(() => Math.fround(-rng.next() * 4)),
    modelVersion: source === 'expert' ? -1 : i % 4,
    reward: rng.next(),
    status: 'ok',
    useCount: 0,
    createdAt: Date.now(),
    metadata: { priority: 0.5 + rng.next() },
  };
}

interface Figures {
  writes: number;
  latency: Record<string, { p50: number; p99: number }>;
}

async function timeTakes(fn: () => Promise<number>, takes: number): Promise<{ p50: number; p99: number }> {
  const ms: number[] = [];
  for (let i = 0; i < takes; i++) {
    const t0 = performance.now();
    const got = await fn();
    if (got === 0) break;
    ms.push(performance.now() - t0);
  }
  if (!ms.length) throw new Error('sampler took nothing');
  return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

async function measure(store: ExperienceStore): Promise<Figures> {
  const rng = new Rng(7);
  let t = 0;
  for (let b = 0; b < BATCHES; b++) {
    const batch = Array.from({ length: 64 }, (_, i) => experience(b * 64 + i, rng));
    const t0 = performance.now();
    await store.appendExperiences(batch);
    t += performance.now() - t0;
  }
  const writes = (BATCHES * 64) / (t / 1000);
  await store.appendExperiences(Array.from({ length: 256 }, (_, i) => experience(i, rng, 'expert')));
  const latency: Figures['latency'] = {};
  const req = { batchSize: B, currentVersion: 3, timeoutMs: 0 };
  const takes = Math.min(TAKES, Math.floor((BATCHES * 64) / B / 3));
  latency.priority = await timeTakes(
    async () => (await makeSampler(store, { type: 'priority', maxUses: 1000 }).sample(req)).experiences.length,
    takes,
  );
  latency.expert = await timeTakes(
    async () => (await makeSampler(store, { type: 'expert' }).sample(req)).experiences.length,
    takes,
  );
  latency.fifo = await timeTakes(
    async () => (await makeSampler(store, { type: 'fifo', maxStaleness: 3 }).sample(req)).experiences.length,
    takes,
  );
  latency.mixed = await timeTakes(
    async () =>
      (await makeSampler(store, { type: 'mixed', expertRatio: 0.5, maxStaleness: 3 }).sample(req)).experiences.length,
    takes,
  );
  return { writes, latency };
}

function emit(backend: string, f: Figures, base: Figures | null): void {
  report({
    bench: 'buffer',
    figure: `${backend}_write_batch64`,
    unit: 'experiences/s',
    value: f.writes,
    baseline: base ? 'sqlite' : null,
    baseline_value: base?.writes ?? null,
  });
  for (const [name, l] of Object.entries(f.latency)) {
    for (const p of ['p50', 'p99'] as const) {
      const bv = base?.latency[name]?.[p] ?? null;
      report({
        bench: 'buffer',
        figure: `${backend}_sample_${name}_b${B}_${p}`,
        unit: 'ms',
        value: l[p],
        baseline: bv === null ? null : 'sqlite',
        baseline_value: bv,
      });
    }
  }
}

// Storage format: array blob vs JSON text for one realistic experience.
{
  const e = experience(1, new Rng(1));
  const json = Buffer.byteLength(
    JSON.stringify({ p: e.promptTokens, r: e.responseTokens, m: e.actionMask, l: e.logprobs }),
  );
  const blob = encodeArrays(e).length;
  report({
    bench: 'buffer',
    figure: 'array_bytes_per_experience',
    unit: 'bytes',
    value: blob,
    baseline: 'json_text',
    baseline_value: json,
  });
}

const dir = mkdtempSync(join(tmpdir(), 'rft-bench-buffer-'));
let sqlite: Figures;
try {
  const s = await openStore(join(dir, 'buffer.db'));
  sqlite = await measure(s);
  const st = await s.stats();
  await s.close();
  emit('sqlite', sqlite, null);
  const size = spawnSync('du', ['-sb', join(dir, 'buffer.db')], { encoding: 'utf8' }).stdout.split('\t')[0];
  if (size)
    report({
      bench: 'buffer',
      figure: 'sqlite_file_bytes_per_experience',
      unit: 'bytes',
      value: Number(size) / st.total,
      baseline: null,
      baseline_value: null,
    });
  // synchronous=NORMAL (durable across a process kill, not a power loss) beside the FULL default.
  const n = await openStore(`sqlite:${join(dir, 'normal.db')}?synchronous=normal`);
  const normal = await measure(n);
  await n.close();
  report({
    bench: 'buffer',
    figure: 'sqlite_write_batch64_synchronous_normal',
    unit: 'experiences/s',
    value: normal.writes,
    baseline: 'sqlite_full',
    baseline_value: sqlite.writes,
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

let pgUrl = process.env.RFT_TEST_PG_URL;
let pgDir: string | undefined;
if (!pgUrl) {
  const r = spawnSync('bash', [join(root, 'scripts', 'pg-test-server.sh'), 'start'], { encoding: 'utf8' });
  if (r.status === 0) [pgUrl, pgDir] = r.stdout.trim().split('\n');
  else console.error(`bench buffer: PostgreSQL did not start, no PostgreSQL figures: ${r.stderr.trim()}`);
}
if (pgUrl) {
  try {
    const u = new URL(pgUrl);
    u.searchParams.set('schema', `bench_${randomBytes(4).toString('hex')}`);
    const p = await openStore(u.toString());
    const f = await measure(p);
    await p.close();
    emit('postgres', f, sqlite);
  } finally {
    if (pgDir) spawnSync('bash', [join(root, 'scripts', 'pg-test-server.sh'), 'stop', pgDir]);
  }
}
