// Reading a large Parquet taskset (written by DuckDB, zstd, GSM8K-shaped rows of random text)
// against the JSONL of the same rows: rows/s and peak RSS, each measured in a fresh process.
// `stream`: every row read and dropped (Parquet: by row group; JSONL: line by line with JSON.parse),
// what a streaming reader costs. `load`: loadTaskset, every row validated and kept as a task (a
// run holds its taskset in memory), for both files, on their first LOAD_ROWS rows (500k): 6M tasks
// do not fit Node's default heap, and the JSONL loader reads its file whole (2 GiB at most).
// Usage: npm run bench -- taskset-parquet [MB of Parquet, default 1024] [folder, default the temp folder] [stream|load]
import { spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { report } from './report.js';

const self = fileURLToPath(import.meta.url);
const GSM = { prompt_key: 'question', response_key: 'answer' };

// Child: one measurement, printed as JSON.
if (process.env.RFT_BENCH_CHILD) {
  const [mode, file] = JSON.parse(process.env.RFT_BENCH_CHILD) as [string, string];
  const t0 = performance.now();
  let rows = 0;
  let error: string | undefined;
  try {
    if (mode === 'load') {
      const { loadTaskset } = await import('../backend/buffer/taskset/load.js');
      const r = await loadTaskset(file, { fields: GSM, defaultIds: true });
      rows = r.tasks.length;
      if (r.errors.length) error = `${r.errors.length} bad rows`;
    } else if (file.endsWith('.parquet')) {
      const { readColumnar } = await import('../backend/core/taskset-columnar/index.js');
      for await (const r of readColumnar(file, 'parquet', new Map())) if ('value' in r) rows++;
    } else {
      for await (const line of createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity }))
        if (line && JSON.parse(line)) rows++;
    }
  } catch (e) {
    error = (e as Error).message.slice(0, 200);
  }
  const s = (performance.now() - t0) / 1000;
  console.log(JSON.stringify({ rows, s, maxRssMB: process.resourceUsage().maxRSS / 1024, error }));
  process.exit(0);
}

const targetMB = Number(process.argv[2] ?? 1024);
const dir = process.argv[3] ?? join(tmpdir(), 'rft-bench-parquet');
mkdirSync(dir, { recursive: true });
// ~165 bytes a row in zstd Parquet (measured: hex text compresses about 3:1): rows for the size asked.
const rows = Math.max(10_000, Math.round((targetMB * 1e6) / 165));
const pq = join(dir, `gsm-${rows}.parquet`);
const jl = join(dir, `gsm-${rows}.jsonl`);
const select = `SELECT 'Q' || i || ': ' || md5(i::VARCHAR) || ' ' || md5((i + 1)::VARCHAR) || ' ' || md5((i + 2)::VARCHAR) || ' ' || md5((i + 3)::VARCHAR) || ' ' || md5((i + 4)::VARCHAR) || ' ' || md5((i + 5)::VARCHAR) || '?' AS question, md5((i * 7)::VARCHAR) || ' ' || md5((i * 7 + 1)::VARCHAR) || ' ' || md5((i * 7 + 2)::VARCHAR) || ' ' || md5((i * 7 + 3)::VARCHAR) || ' ' || md5((i * 7 + 4)::VARCHAR) || ' ' || md5((i * 7 + 5)::VARCHAR) || ' ' || md5((i * 7 + 6)::VARCHAR) || ' ' || md5((i * 7 + 7)::VARCHAR) || '\n#### ' || i AS answer FROM range(${rows}) t(i)`;
let writeS = 0;
if (!existsSync(pq) || !existsSync(jl)) {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  const t = performance.now();
  await conn.run(`COPY (${select}) TO '${pq}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 100000)`);
  writeS = (performance.now() - t) / 1000;
  await conn.run(`COPY (SELECT * FROM '${pq}') TO '${jl}' (FORMAT json)`);
  conn.closeSync();
  db.closeSync();
}
const LOAD_ROWS = Math.min(rows, 500_000);
const pqLoad = join(dir, `gsm-${LOAD_ROWS}-of-${rows}.parquet`);
const jlLoad = join(dir, `gsm-${LOAD_ROWS}-of-${rows}.jsonl`);
if (!existsSync(pqLoad) || !existsSync(jlLoad)) {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  await conn.run(
    `COPY (SELECT * FROM '${pq}' LIMIT ${LOAD_ROWS}) TO '${pqLoad}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 100000)`,
  );
  await conn.run(`COPY (SELECT * FROM '${pqLoad}') TO '${jlLoad}' (FORMAT json)`);
  conn.closeSync();
  db.closeSync();
}
const mb = (f: string) => statSync(f).size / 1e6;
console.error(
  `${rows} rows: ${pq} ${mb(pq).toFixed(0)} MB${writeS ? ` (written in ${writeS.toFixed(0)} s)` : ''}, ${jl} ${mb(jl).toFixed(0)} MB`,
);

function measure(mode: string, file: string): { rows: number; s: number; maxRssMB: number; error?: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', self], {
    env: { ...process.env, RFT_BENCH_CHILD: JSON.stringify([mode, file]) },
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  const line = r.stdout.trim().split('\n').pop();
  if (!line) return { rows: 0, s: 0, maxRssMB: 0, error: `exit ${r.status}: ${r.stderr.slice(-300)}` };
  return JSON.parse(line);
}

const only = process.argv[4];
for (const mode of ['stream', 'load'].filter((m) => !only || m === only)) {
  const [pf, jf, n] = mode === 'load' ? [pqLoad, jlLoad, LOAD_ROWS] : [pq, jl, rows];
  const p = measure(mode, pf);
  const j = measure(mode, jf);
  for (const [what, m] of [
    ['parquet', p],
    ['jsonl', j],
  ] as const)
    if (m.error) console.error(`${mode} ${what}: ${m.error}`);
  const common = { rows: n, parquet_mb: Math.round(mb(pf)), jsonl_mb: Math.round(mb(jf)) };
  report({
    bench: 'taskset-parquet',
    figure: `${mode}_rows_per_s`,
    unit: 'rows/s',
    value: p.error && !p.rows ? 0 : p.rows / p.s,
    baseline: 'jsonl',
    baseline_value: j.error && !j.rows ? 0 : j.rows / j.s,
    ...common,
    ...(p.error ? { parquet_error: p.error } : {}),
    ...(j.error ? { jsonl_error: j.error } : {}),
  });
  report({
    bench: 'taskset-parquet',
    figure: `${mode}_peak_rss`,
    unit: 'MB',
    value: p.maxRssMB,
    baseline: 'jsonl',
    baseline_value: j.maxRssMB,
    ...common,
  });
}
