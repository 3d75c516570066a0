// What workflow.file code could still do to the run that hosts it (issue 40 item 19), each case
// contained and said: a signal to the run's own process (was: the run killed silently), a BigInt,
// a function or a cycle in a result (was: "Do not know how to serialize a BigInt" naming nothing),
// a 5e6-element `details` (was: the run's heap exhausted receiving it), 3 MiB printed a call (was:
// passed on uncapped), a loop or a never-settling await while loading (was: a hang with no message),
// a reward that never returns (was: its full limit once per call, call after call), and processes
// it started, detached ones too (were left running after the run).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCustomFile } from '../../backend/explorer/custom.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import { UserCodeHost } from '../../backend/explorer/user-code/host.js';
import { BREAKER_TIMEOUTS, OUTPUT_CAP_BYTES, plainDataProblem } from '../../backend/explorer/user-code/limits.js';
import { cliNodeArgs } from '../../backend/core/package-root.js';
import { tinyConfig, writeConfig } from '../coordinator/tiny-config.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-user-code-hostile-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const task = (id: string) => ({ id, taskset: 'x', domain: 'text' as const, prompt: 'p', answer: 'yes' });
const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const file = join(dir, 'hostile.mjs');
writeFileSync(
  file,
  `import { spawn, spawnSync } from 'node:child_process';
export default function (rft) {
  rft.register('reward', 'h_kill', (task, what) => {
    if (what === 'self') process.kill(process.pid, 'SIGKILL');
    if (what === 'group') process.kill(0, 'SIGCONT');
    if (what === 'parent') process.kill(process.ppid, 'SIGCONT');
    if (what === 'probe') return process.kill(process.pid, 0) ? 1 : 0;
    return 1;
  });
  rft.register('reward', 'h_value', (task, what) => {
    if (what === 'bigint') return { reward: 1, details: { big: 10n } };
    if (what === 'function') return { reward: 1, details: { f: () => 1 } };
    if (what === 'cycle') { const d = { a: 1 }; d.self = d; return { reward: 1, details: d }; }
    if (what === 'huge') return { reward: 1, details: { xs: new Array(5e6).fill(1) } };
    return { reward: 1, details: { fine: 'yes' } };
  });
  rft.register('reward', 'h_print', () => { console.log('x'.repeat(3 << 20)); return 1; });
  rft.register('reward', 'h_slow', (task, what) => (what === 'hang' ? new Promise(() => {}) : 1));
  rft.register('reward', 'h_spawn', () => {
    // A detached child, and a grandchild whose parent exits at once (orphaned, in a session of its own).
    const child = spawn('sleep', ['1000'], { detached: true, stdio: 'ignore' });
    child.unref();
    const orphan = Number(spawnSync('sh', ['-c', 'setsid sleep 1000 >/dev/null 2>&1 & echo $!'], { encoding: 'utf8' }).stdout.trim());
    return { reward: 1, details: { child: child.pid, orphan } };
  });
}
`,
);
let loading: ReturnType<typeof loadCustomFile> | undefined;
const load = () => (loading ??= loadCustomFile(file, { timeoutMs: 20_000 }));

test('a signal to the run’s own process, group or parent is refused: the call fails, the run lives on', async () => {
  await load();
  const reward = rewardFns.get('h_kill');
  for (const [what, target] of [
    ['self', "the run's own process"],
    ['group', "the run's own process group"],
    ['parent', "the run's parent process"],
  ] as const) {
    const r = await reward(task('t'), what);
    assert.equal(r.status, 'infra_failure', what);
    assert.match(r.reason!, new RegExp(`would signal ${esc(target)} .*refused`));
    assert.match(r.reason!, new RegExp(`${esc(file)}:\\d+`), 'names the file and line');
  }
  // Signal 0 (is it alive?) passes; so does the next call.
  assert.deepEqual(await reward(task('t'), 'probe'), { reward: 1, status: 'ok' });
});

test('a BigInt, a function, a cycle or a 5e6-element details: refused in the code’s thread, naming the field and the file', async () => {
  await load();
  const reward = rewardFns.get('h_value');
  for (const [what, why] of [
    ['bigint', /field 'details\.big' is a BigInt/],
    ['function', /field 'details\.f' is a function/],
    ['cycle', /field 'details\.self' refers back to an object that contains it/],
    ['huge', /field 'details\.xs\[\d+\]' takes its result past 1 MiB/],
  ] as const) {
    const r = await reward(task('t'), what);
    assert.equal(r.status, 'infra_failure', `${what}: ${JSON.stringify(r).slice(0, 200)}`);
    assert.match(r.reason!, why);
    assert.match(r.reason!, new RegExp(`^custom reward 'h_value' returned a value it cannot take \\(${esc(file)}\\)`));
    // The explorer writes what it got: never a value JSON refuses.
    JSON.stringify(r);
  }
  assert.deepEqual(await reward(task('t'), 'ok'), {
    reward: 1,
    status: 'ok',
    details: { fine: 'yes' },
    reason: undefined,
  });
});

test('plainDataProblem: plain data within the limit passes; the walk names nested fields', () => {
  assert.equal(plainDataProblem({ a: [1, 'x', null, { b: true }], t: new Float32Array(4) }, 1000), undefined);
  assert.match(
    plainDataProblem([{ logprobs: [1n] }], 1000, 'its experiences')!,
    /field '\[0\]\.logprobs\[0\]' is a BigInt/,
  );
  assert.match(plainDataProblem(new Map(), 1000)!, /the value is a Map/);
  // A shared (not circular) object is plain data.
  const shared = { x: 1 };
  assert.equal(plainDataProblem({ a: shared, b: shared }, 1000), undefined);
});

test('output over the cap is dropped and counted; what passes is the cap', async () => {
  const host = new UserCodeHost(file, 20_000);
  const write = process.stdout.write;
  let passed = 0;
  try {
    await host.start();
    // Count what the host passes on of the code's output (the x's), and let everything else through.
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      const s = Buffer.from(chunk as never).toString('latin1');
      const xs = s.replace(/[^x]/g, '').length;
      passed += xs;
      return xs === s.length ? true : (write as (...a: unknown[]) => boolean).call(process.stdout, chunk, ...rest);
    }) as typeof process.stdout.write;
    for (let i = 0; i < 3; i++) assert.equal(await host.callReward('h_print', task('t'), ''), 1);
    // What passed reaches this thread's stdout by messages, after the results: wait for it (bounded).
    for (let i = 0; i < 500 && passed < OUTPUT_CAP_BYTES; i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100));
  } finally {
    process.stdout.write = write;
    host.close();
  }
  assert.equal(host.printed, OUTPUT_CAP_BYTES);
  assert.equal(passed, OUTPUT_CAP_BYTES, 'no more than the cap reached the run’s stdout');
  assert.equal(host.dropped, 3 * ((3 << 20) + 1) - OUTPUT_CAP_BYTES);
});

test(
  'a loop or an await that never settles while the file loads: stopped at the limit, naming the file',
  { timeout: 120_000 },
  async () => {
    for (const [name, body] of [
      ['top-loop.mjs', 'for (;;) {}\nexport default function (rft) {}\n'],
      ['top-await.mjs', 'await new Promise(() => {});\nexport default function (rft) {}\n'],
      ['default-loop.mjs', 'export default function (rft) { for (;;) {} }\n'],
    ] as const) {
      const f = join(dir, name);
      writeFileSync(f, body);
      const host = new UserCodeHost(f, 300);
      try {
        await assert.rejects(host.start(), (e: Error) => {
          assert.match(
            e.message,
            new RegExp(
              `^${esc(f)}: field 'default': did not finish loading within 0\\.3 s \\(workflow\\.code_timeout_seconds\\)`,
            ),
          );
          return true;
        });
      } finally {
        host.close();
      }
    }
  },
);

test(
  `${BREAKER_TIMEOUTS} calls in a row past their limit: the file is given up on, each further call fails at once naming it`,
  { timeout: 120_000 },
  async () => {
    const host = new UserCodeHost(file, 300);
    try {
      await host.start();
      const call = (what: string) =>
        host.callReward('h_slow', task('t'), what).then(
          (v) => `ok ${v}`,
          (e: Error) => e.message,
        );
      // A call that returns in between starts the count again.
      for (let i = 0; i < BREAKER_TIMEOUTS - 1; i++) assert.match(await call('hang'), /did not return within 0\.3 s/);
      assert.equal(await call('fine'), 'ok 1');
      for (let i = 0; i < BREAKER_TIMEOUTS; i++) assert.match(await call('hang'), /did not return within 0\.3 s/);
      assert.equal(host.tripped !== undefined, true);
      const given = await call('fine');
      assert.match(
        given,
        new RegExp(
          `^is not called any more: ${BREAKER_TIMEOUTS} calls in a row did not return within 0\\.3 s .*${esc(file)} is given up on`,
        ),
      );
    } finally {
      host.close();
    }
  },
);

/** Whether PID is gone (a zombie nobody waits for counts as gone: it runs nothing). */
function gone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}
async function waitGone(pids: number[]): Promise<boolean> {
  // Killing is asynchronous (after the thread is terminated): wait for it, bounded.
  for (let i = 0; i < 500 && !pids.every(gone); i++) await new Promise((r) => setTimeout(r, 20));
  return pids.every(gone);
}

test(
  'processes the code started, detached or orphaned, are killed when its thread ends',
  { skip: process.platform !== 'linux' },
  async () => {
    const host = new UserCodeHost(file, 20_000);
    let pids: number[] = [];
    try {
      await host.start();
      const r = (await host.callReward('h_spawn', task('t'), '')) as { details: { child: number; orphan: number } };
      pids = [r.details.child, r.details.orphan];
      assert.ok(
        pids.every((p) => p > 0 && !gone(p)),
        'both run',
      );
    } finally {
      host.close();
    }
    assert.equal(await waitGone(pids), true, `killed: ${pids.filter((p) => !gone(p))}`);
  },
);

test(
  'processes the code started are killed when the run’s process exits without unloading the file',
  { skip: process.platform !== 'linux' },
  async () => {
    const script = join(dir, 'run.mts');
    const hostUrl = new URL('../../backend/explorer/user-code/host.ts', import.meta.url).href;
    writeFileSync(
      script,
      `import { UserCodeHost } from ${JSON.stringify(hostUrl)};
const host = new UserCodeHost(${JSON.stringify(file)}, 20_000);
await host.start();
const r = await host.callReward('h_spawn', { id: 't', taskset: 'x', domain: 'text', prompt: 'p', answer: 'y' }, '');
console.log(JSON.stringify(r.details));
`,
    );
    const tsx = fileURLToPath(import.meta.resolve('tsx'));
    const out = spawnSync(process.execPath, ['--import', tsx, script], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(out.status, 0, out.stderr);
    const d = JSON.parse(out.stdout.trim().split('\n').pop()!) as { child: number; orphan: number };
    assert.ok(existsSync('/proc'));
    assert.equal(await waitGone([d.child, d.orphan]), true, 'none outlives the run');
  },
);

test(
  'a run whose reward never returns stops early with a message naming the file (not its limit once per call)',
  { timeout: 300_000 },
  async () => {
    const ws = mkdtempSync(join(tmpdir(), 'rft-user-code-breaker-'));
    try {
      const code = join(ws, 'never.mjs');
      writeFileSync(
        code,
        `export default function (rft) {\n  rft.register('reward', 'never', () => new Promise(() => {}));\n}\n`,
      );
      const cfg = tinyConfig({ sync_offset: 0 }, 1, {
        experts: undefined,
        stages: [{ name: 'main', algorithm: { name: 'grpo' }, steps: 2 }],
        placement: 'memory',
        workflow: { name: 'single_turn', reward: 'never', file: './never.mjs', code_timeout_seconds: 0.5 },
      });
      const file = writeConfig(ws, cfg);
      const r = spawnSync(
        process.execPath,
        [...cliNodeArgs(), 'run', file, '--workspace', ws, '--quiet', '--trust-workspace-code'],
        { encoding: 'utf8', timeout: 240_000 },
      );
      assert.equal(r.status, 1, r.stderr.slice(-2000));
      // The eval before training has no result; the training step stops at the given-up file.
      assert.match(r.stderr, /eval start \(v0\): no result: 8 infrastructure failure/);
      assert.match(
        r.stderr,
        new RegExp(
          `^rft: explore step 0: every sample of 32 rounds in a row was an infra failure .*the latest: custom reward 'never' is not called any more: 3 calls in a row did not return within 0\\.5 s .*${esc(code)} is given up on`,
          'm',
        ),
      );
    } finally {
      rmSync(ws, { recursive: true, force: true });
    }
  },
);
