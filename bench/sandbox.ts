// Sandbox benchmark: worker start latency (p50, against a bare `node -e` start) and executions per
// second of a small function with the pool warm, 1 and 2 workers (against the same function
// compiled and called in-process with no sandbox: ratio = sandboxed / in-process).
// `npm run bench -- sandbox [jobs]`
import { spawn } from 'node:child_process';
import { SandboxPool } from '../backend/explorer/sandbox/index.js';
import { median, report } from './report.js';

const JOBS = Number(process.argv[2] ?? 400);
const STARTS = 8;
const CODE = 'function add(a, b) { return a + b }';
const job = { code: CODE, entryPoint: 'add', args: [[2, 3]] };

function bareStartMs(): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, ['-e', "process.stdout.write('ready\\n')"], {
      stdio: ['ignore', 'pipe', 'ignore'],
      env: {},
    });
    c.stdout.once('data', () => resolve(performance.now() - t0));
    c.on('error', reject);
  });
}

const starts: number[] = [];
const bare: number[] = [];
let layers = '';
for (let i = 0; i < STARTS; i++) {
  const pool = new SandboxPool({ workers: 1 });
  layers = JSON.stringify(pool.isolation);
  await pool.warm();
  starts.push(pool.startupMs[0]!);
  await pool.close();
  bare.push(await bareStartMs());
}
report({
  bench: 'sandbox',
  figure: 'worker_start_latency_p50',
  unit: 'ms',
  value: median(starts),
  baseline: 'bare node -e start (no isolation layers)',
  baseline_value: median(bare),
  layers,
});

// In-process, no sandbox: compile the code and call the function, per execution.
function inProcessPerS(n: number): number {
  let sink = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const fn = new Function(`${CODE}; return add;`)() as (a: number, b: number) => number;
    sink += fn(2, 3);
  }
  const s = (performance.now() - t0) / 1000;
  if (sink !== 5 * n) throw new Error('baseline computed the wrong sum');
  return n / s;
}
const baseline = inProcessPerS(JOBS * 10);

for (const workers of [1, 2]) {
  const pool = new SandboxPool({ workers });
  await pool.warm();
  for (let i = 0; i < 20; i++) await pool.run(job); // warm-up
  const t0 = performance.now();
  let done = 0;
  let failed = 0;
  // keep every worker busy: two jobs in flight per worker
  await Promise.all(
    Array.from({ length: workers * 2 }, async () => {
      while (done < JOBS) {
        done++;
        const r = await pool.run(job);
        if (r.status !== 'ok' || !r.calls[0]?.ok || r.calls[0].value !== 5) failed++;
      }
    }),
  );
  const perS = done / ((performance.now() - t0) / 1000);
  await pool.close();
  if (failed) throw new Error(`${failed} sandboxed executions failed`);
  report({
    bench: 'sandbox',
    figure: `executions_per_s_${workers}_worker${workers > 1 ? 's' : ''} (ratio = sandboxed / in-process)`,
    unit: 'exec/s',
    value: perS,
    baseline: 'same function compiled and called in-process, no sandbox',
    baseline_value: baseline,
  });
}
