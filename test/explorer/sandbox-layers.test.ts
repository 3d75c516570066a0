// The outer layers on their own: what code that had fully escaped the vm context (a worker program
// with require and process) could do in a sandbox worker process. The permission model must deny
// file reads and writes, child processes and worker threads; the worker has no environment; where
// a network namespace is active it cannot reach the host; where it runs as nobody it cannot signal
// the host. Also: the pool's classification of sandbox failures (infra) against user failures.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCodeTests } from '../../backend/explorer/rewards/code_tests.js';
import { DEFAULT_SANDBOX_OPTIONS, SandboxPool } from '../../backend/explorer/sandbox/index.js';
import { isolationLayers, workerCommand } from '../../backend/explorer/sandbox/isolation.js';

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
    const child = spawn(cmd, [...args, JSON.stringify([secret, canary, (server.address() as AddressInfo).port])], { env: {}, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    await new Promise((res) => child.on('close', res));
    const out = JSON.parse(stdout.trim().split('\n').pop() || '{}') as Record<string, string>;
    assert.ok(Object.keys(out).length > 0, `no report: ${stderr}`);
    if (process.env.RFT_HOSTILE_DEBUG) console.error(layers, out);
    for (const k of ['read', 'readdir', 'write', 'spawn', 'worker']) assert.match(out[k]!, /^denied: ERR_ACCESS_DENIED/, `${k}: ${out[k]}`);
    assert.equal(out.env, 'allowed: {}', 'the worker inherits no environment');
    assert.equal(existsSync(canary), false);
    if (layers.network !== 'none') {
      assert.match(out.net!, /^denied/, `net: ${out.net}`);
      assert.equal(connections, 0);
    }
    if (layers.user !== 'same as host') {
      assert.equal(out.uid, 'allowed: 65534');
      assert.match(out.signal!, /^denied: EPERM/, 'an unprivileged worker cannot signal the host');
    }
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sandbox failures are infra_failure, user failures are not', async () => {
  const tk = { id: 'c', taskset: 't', domain: 'code' as const, prompt: 'p', entryPoint: 'f', tests: [{ args: [1], expected: 2 }] };
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
    const oom = await runCodeTests(tk, 'function f() { const a = []; for (;;) a.push(new Array(1e6).fill(1.5)) }', pool);
    assert.deepEqual([oom.status, oom.reward, oom.details?.kind], ['ok', 0, 'memory']);
    assert.equal((await runCodeTests(tk, 'function f(x) { return x + 1 }', pool)).reward, 1);
  } finally {
    await pool.close();
  }
});
