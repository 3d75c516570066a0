// The outer layers on their own: what code that had fully escaped the vm context (a worker program
// with require and process) could do in a sandbox worker process. The permission model must deny
// file reads and writes, child processes and worker threads; the worker has no environment; where
// a network namespace is active it cannot reach the host; where it runs as nobody it cannot signal
// the host. Also: the pool's classification of sandbox failures (infra) against user failures.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCodeTests } from '../../backend/explorer/rewards/code_tests.js';
import { DEFAULT_SANDBOX_OPTIONS, SandboxPool } from '../../backend/explorer/sandbox/index.js';
import { isolationLayers, workerCommand } from '../../backend/explorer/sandbox/isolation.js';
import { WorkerProcess } from '../../backend/explorer/sandbox/worker-process.js';

const ESCAPED = String.raw`
const out = {};
const tryIt = (name, fn) => { try { out[name] = 'allowed: ' + String(fn()).slice(0, 80); } catch (e) { out[name] = 'denied: ' + (e.code || e.message); } };
const [secret, canary, port] = JSON.parse(process.argv[1]);
tryIt('read', () => require('fs').readFileSync(secret, 'utf8'));
tryIt('readdir', () => require('fs').readdirSync('/').join(','));
tryIt('write', () => { require('fs').writeFileSync(canary, 'x'); return 'written'; });
tryIt('spawn', () => require('child_process').spawnSync('/bin/sh', ['-c', 'echo hi > ' + canary]).status);
tryIt('worker', () => new (require('worker_threads').Worker)('1', { eval: true }));
tryIt('env', () => JSON.stringify(process.env));
tryIt('uid', () => process.getuid());
tryIt('signal', () => process.kill(process.ppid, 0));
const s = require('net').connect(port, '127.0.0.1');
s.on('connect', () => { out.net = 'allowed: connected'; done(); });
s.on('error', (e) => { out.net = 'denied: ' + e.code; done(); });
setTimeout(() => { out.net = out.net || 'denied: no answer'; done(); }, 2000);
function done() { process.stdout.write(JSON.stringify(out) + '\n'); process.exit(0); }
`;

test('a program that escaped the vm still cannot touch files, processes, threads, env, the network or the host', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-layers-'));
  const secret = join(dir, 'secret.txt');
  const canary = join(dir, 'canary.txt');
  writeFileSync(secret, randomBytes(8).toString('hex'));
  let connections = 0;
  const server = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((res) => server.listen(0, '127.0.0.1', res));
  try {
    const layers = isolationLayers(DEFAULT_SANDBOX_OPTIONS);
    assert.ok(layers.permissionFlag, 'Node permission model available');
    const { cmd, args } = workerCommand(DEFAULT_SANDBOX_OPTIONS, ESCAPED);
    // `node -e SOURCE ARG`: the argument reaches process.argv[1]
    const child = spawn(cmd, [...args, JSON.stringify([secret, canary, (server.address() as AddressInfo).port])], {
      env: {},
      cwd: '/',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    await new Promise((res) => child.on('close', res));
    const out = JSON.parse(stdout.trim().split('\n').pop() || '{}') as Record<string, string>;
    assert.ok(Object.keys(out).length > 0, `no report: ${stderr}`);
    if (process.env.RFT_HOSTILE_DEBUG) console.error(layers, out);
    for (const k of ['read', 'readdir', 'write', 'spawn', 'worker'])
      assert.match(out[k]!, /^denied: ERR_ACCESS_DENIED/, `${k}: ${out[k]}`);
    assert.equal(out.env, 'allowed: {}', 'the worker inherits no environment');
    assert.equal(existsSync(canary), false);
    if (layers.network !== 'none') {
      assert.match(out.net!, /^denied/, `net: ${out.net}`);
      assert.equal(connections, 0);
    }
    if (layers.user !== 'same as host') assert.equal(out.uid, 'allowed: 65534');
    // In its own PID namespace the parent is outside (ppid 0, tested on its own below); else the drop of identity stops it.
    if (layers.user !== 'same as host' && !layers.pids.startsWith('own'))
      assert.match(out.signal!, /^denied: EPERM/, 'an unprivileged worker cannot signal the host');
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

// Escaped code against a host process of the sandbox's own user (another sandbox worker, say): with a
// PID namespace it sees only itself (pid 1) and the host pid names nothing it can signal.
const PID_PROBE = String.raw`
const victim = Number(process.argv[1]);
const out = { pid: process.pid, ppid: process.ppid };
try { process.kill(victim, 'SIGKILL'); out.kill = 'allowed'; } catch (e) { out.kill = 'denied: ' + e.code; }
process.stdout.write(JSON.stringify(out) + '\n');
`;

test('with a PID namespace, escaped code cannot see or signal a host process of the sandbox user', async (t) => {
  const layers = isolationLayers(DEFAULT_SANDBOX_OPTIONS);
  if (!layers.pids.startsWith('own')) return t.skip(`no PID namespace here: ${layers.pids}`);
  // The victim runs as the sandbox's user (nobody when the host is root, else the host's user).
  const asNobody = process.getuid?.() === 0 && layers.user !== 'same as host';
  const victim = spawn(
    asNobody ? 'setpriv' : 'sleep',
    asNobody ? ['--reuid=65534', '--regid=65534', '--clear-groups', 'sleep', '60'] : ['60'],
    { stdio: 'ignore' },
  );
  try {
    await new Promise((res) => victim.on('spawn', res));
    assert.ok(victim.pid! > 2);
    const { cmd, args } = workerCommand(DEFAULT_SANDBOX_OPTIONS, PID_PROBE);
    const child = spawn(cmd, [...args, String(victim.pid)], { env: {}, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    await new Promise((res) => child.on('close', res));
    const out = JSON.parse(stdout.trim().split('\n').pop() || '{}') as { pid?: number; ppid?: number; kill?: string };
    assert.equal(out.pid, 1, `the worker is pid 1 of its own namespace: ${stdout} ${stderr}`);
    assert.equal(out.ppid, 0, 'its parent (outside the namespace) is not visible');
    assert.equal(out.kill, 'denied: ESRCH', 'the host pid names no process in the namespace');
    assert.equal(victim.exitCode, null, 'the host process is alive');
    assert.equal(victim.signalCode, null);
    // Killing a worker the way the pool does ends the program inside the namespace too (unshare forks it): nothing of its group is left.
    const w = new WorkerProcess(DEFAULT_SANDBOX_OPTIONS);
    await w.ready;
    const pid = w.child.pid!;
    assert.notEqual(spawnSync('pgrep', ['-g', String(pid)], { encoding: 'utf8' }).stdout.trim(), '', 'the worker runs');
    const closed = new Promise((res) => w.child.on('close', res));
    w.kill();
    await closed;
    let left = '';
    for (let i = 0; i < 50; i++) {
      left = spawnSync('pgrep', ['-g', String(pid)], { encoding: 'utf8' }).stdout.trim();
      if (!left) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.equal(left, '', 'no process of the worker is left');
  } finally {
    victim.kill('SIGKILL');
  }
});

test('sandbox failures are infra_failure, user failures are not', async () => {
  const tk = {
    id: 'c',
    taskset: 't',
    domain: 'code' as const,
    prompt: 'p',
    entryPoint: 'f',
    tests: [{ args: [1], expected: 2 }],
  };
  // a pool that cannot start its workers (no such Node binary): the sandbox failed, not the code
  const broken = new SandboxPool({ workers: 1, nodePath: '/nonexistent/node', startupTimeoutMs: 3000 });
  const r1 = await runCodeTests(tk, 'function f(x) { return x + 1 }', broken);
  await broken.close();
  assert.equal(r1.status, 'infra_failure', JSON.stringify(r1));
  // a closed pool
  const closed = new SandboxPool({ workers: 1 });
  await closed.close();
  assert.equal((await runCodeTests(tk, 'function f(x) { return x + 1 }', closed)).status, 'infra_failure');
  // an aborted call
  const pool = new SandboxPool({ workers: 1, timeoutMs: 8000 }); // generous: the memory bomb must hit the heap limit first
  try {
    const ac = new AbortController();
    const pending = runCodeTests(tk, 'function f() { for (;;) {} }', pool, ac.signal);
    setTimeout(() => ac.abort(), 100);
    assert.equal((await pending).status, 'infra_failure');
    // the pool replaced the worker and goes on; a crash of the user's code is a normal low reward
    assert.deepEqual([(await runCodeTests(tk, 'function f(x) { return x + 1 }', pool)).reward], [1]);
    const oom = await runCodeTests(
      tk,
      'function f() { const a = []; for (;;) a.push(new Array(1e6).fill(1.5)) }',
      pool,
    );
    assert.deepEqual([oom.status, oom.reward, oom.details?.kind], ['ok', 0, 'memory']);
    assert.equal((await runCodeTests(tk, 'function f(x) { return x + 1 }', pool)).reward, 1);
  } finally {
    await pool.close();
  }
});
