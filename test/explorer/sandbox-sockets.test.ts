// A program that escaped the vm context cannot reach a filesystem Unix socket (a local daemon) from
// a sandbox worker: the socket guard refuses every path connect (net.connect, createConnection,
// http's socketPath) and cannot be replaced. The same program without the guard does connect, so
// the test can fail: the network namespace and the permission model alone do not stop it.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DEFAULT_SANDBOX_OPTIONS } from '../../backend/explorer/sandbox/index.js';
import { isolationLayers, workerCommand } from '../../backend/explorer/sandbox/isolation.js';
import { SOCKET_GUARD_URL } from '../../backend/explorer/sandbox/socket-guard.js';

const ESCAPED = String.raw`
const net = require('net');
const out = {};
const sock = process.argv[1];
const pending = [];
const attempt = (name, open) => pending.push(new Promise((res) => {
  try {
    const c = open();
    c.on('connect', () => { out[name] = 'allowed: connected'; c.destroy(); res(); });
    c.on('error', (e) => { out[name] = 'denied: ' + e.code; res(); });
  } catch (e) { out[name] = 'denied: ' + (e.code || e.message); res(); }
}));
attempt('connect', () => net.connect(sock));
attempt('options', () => net.createConnection({ path: sock }));
attempt('socket', () => new net.Socket().connect(sock));
pending.push(new Promise((res) => {
  try { require('http').get({ socketPath: sock, path: '/' }, () => { out.http = 'allowed'; res(); }).on('error', (e) => { out.http = 'denied: ' + e.code; res(); }); }
  catch (e) { out.http = 'denied: ' + (e.code || e.message); res(); }
}));
Promise.all(pending).then(() => {
  try { Object.defineProperty(net.Socket.prototype, 'connect', { value: () => 1 }); out.redefine = 'allowed'; } catch (e) { out.redefine = 'denied'; }
  process.stdout.write(JSON.stringify(out) + '\n'); process.exit(0); });
setTimeout(() => { process.stdout.write(JSON.stringify(out) + '\n'); process.exit(0); }, 3000);
`;

async function runWorker(cmd: string, args: string[], sock: string): Promise<Record<string, string>> {
  const child = spawn(cmd, [...args, sock], { env: {}, cwd: '/', stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  await new Promise((res) => child.on('close', res));
  const out = JSON.parse(stdout.trim().split('\n').pop() || '{}') as Record<string, string>;
  assert.ok(Object.keys(out).length > 0, `no report: ${stderr}`);
  return out;
}

test('socket files are refused in a sandbox worker (and would be reachable without the guard)', async () => {
  const layers = isolationLayers(DEFAULT_SANDBOX_OPTIONS);
  assert.ok(layers.permissionFlag, 'Node permission model available');
  assert.equal(layers.unixSockets, 'blocked (socket-guard)');
  // A world-reachable socket, as a daemon's would be (the worker may run as nobody).
  const dir = mkdtempSync(join(tmpdir(), 'rft-sock-'));
  chmodSync(dir, 0o755);
  const sock = join(dir, 'daemon.sock');
  let connections = 0;
  const server = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((res) => server.listen(sock, res));
  chmodSync(sock, 0o777);
  try {
    const { cmd, args } = workerCommand(DEFAULT_SANDBOX_OPTIONS, ESCAPED);
    const i = args.indexOf(SOCKET_GUARD_URL);
    assert.ok(i > 0 && args[i - 1] === '--import', 'the guard is loaded before the program');
    const guarded = await runWorker(cmd, args, sock);
    for (const k of ['connect', 'options', 'socket', 'http'])
      assert.match(guarded[k]!, /^denied: ERR_ACCESS_DENIED/, `${k}: ${guarded[k]}`);
    assert.equal(guarded.redefine, 'denied', 'the guard cannot be replaced');
    assert.equal(connections, 0);

    // Control: the same worker command without the guard reaches the socket.
    const bare = await runWorker(
      cmd,
      args.filter((_, k) => k !== i && k !== i - 1),
      sock,
    );
    assert.equal(bare.connect, 'allowed: connected', JSON.stringify(bare));
    assert.ok(connections > 0);
  } finally {
    server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
