// `rft serve --port`: a token per start in a 0600 file, nothing served before `server/auth`,
// loopback only unless --allow-remote, a message size limit, and a JSON-RPC error reply to every
// frame the server cannot take (malformed, invalid UTF-8, batch, oversized, broken framing).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, serveArgs } from '../../tools/spawn-serve.js';
import { tcpPeer } from '../../tools/raw-rpc.js';
import { frame } from '../../backend/server/framing.js';
import { ErrorCodes } from '../../backend/core/protocol.js';
import { tcpConnector } from '../../src/backend/transport.js';

interface Tcp {
  child: ChildProcess;
  port: number;
  tokenFile: string;
  stderr: () => string;
}

const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

function startTcp(ws: string, extra: string[] = []): Promise<Tcp> {
  // The warning this file checks is logged at level warn, whatever the runner's RFT_LOG_LEVEL.
  const child = spawn(process.execPath, serveArgs(['--workspace', ws, '--port', '0', ...extra]), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RFT_LOG_LEVEL: 'warn' },
  });
  children.push(child);
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  return new Promise((res, rej) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        const l = JSON.parse(out.slice(0, nl)) as { listening: number; tokenFile: string };
        res({ child, port: l.listening, tokenFile: l.tokenFile, stderr: () => err });
      }
    });
    child.once('exit', (c) => rej(new Error(`serve exited ${c}: ${err}`)));
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return child.exitCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise((r) => child.once('exit', (c) => r(c)));
}

const ws = mkdtempSync(join(tmpdir(), 'rft-tcp-ws-'));

test('a random token per start, in a file only the user can read, removed at exit', async () => {
  const a = await startTcp(ws);
  assert.equal(a.tokenFile, join(ws, '.rft', `serve-${a.port}.token`));
  assert.equal(statSync(a.tokenFile).mode & 0o777, 0o600);
  const tokA = readFileSync(a.tokenFile, 'utf8').trim();
  assert.ok(tokA.length >= 40, 'at least 256 bits');
  const b = await startTcp(ws);
  assert.notEqual(readFileSync(b.tokenFile, 'utf8').trim(), tokA);
  for (const s of [a, b]) {
    s.child.kill('SIGTERM');
    await exitOf(s.child);
    assert.equal(existsSync(s.tokenFile), false, 'token file removed at exit');
  }
});

test('nothing is served before server/auth; a wrong token is refused and the connection closed', async () => {
  const s = await startTcp(ws);
  const token = readFileSync(s.tokenFile, 'utf8').trim();

  const p1 = await tcpPeer(s.port);
  p1.send({ jsonrpc: '2.0', id: 1, method: 'buffer/export', params: { file: 'x.jsonl' } });
  const r1 = (await p1.next()) as { id: number; error: { code: number; message: string } };
  assert.equal(r1.id, 1);
  assert.equal(r1.error.code, ErrorCodes.Unauthorized);
  await p1.closed;

  const p2 = await tcpPeer(s.port);
  p2.send({
    jsonrpc: '2.0',
    id: 'a',
    method: 'server/auth',
    params: { token: token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A') },
  });
  const r2 = (await p2.next()) as { error: { code: number; message: string } };
  assert.equal(r2.error.code, ErrorCodes.Unauthorized);
  assert.match(r2.error.message, /wrong token/);
  await p2.closed;

  // The right token: then requests are served on the same connection.
  const p3 = await tcpPeer(s.port);
  p3.send({ jsonrpc: '2.0', id: 'a', method: 'server/auth', params: { token } });
  assert.deepEqual(await p3.next(), { jsonrpc: '2.0', id: 'a', result: { ok: true } });
  p3.send({ jsonrpc: '2.0', id: 2, method: 'server/hello', params: { clientVersion: 't' } });
  const hello = (await p3.next()) as { id: number; result: { pid: number } };
  assert.equal(hello.result.pid, s.child.pid);
  p3.destroy();

  // The extension's connector reads the token file of the workspace and authenticates.
  const t = await tcpConnector(`tcp://127.0.0.1:${s.port}`, { workspace: ws })();
  t.connection.listen();
  const h = (await t.connection.sendRequest('server/hello', { clientVersion: 'ext' })) as { pid: number };
  assert.equal(h.pid, s.child.pid);
  t.kill();
  // Without a token it says how to give one; with a wrong one it names the refusal.
  await assert.rejects(tcpConnector(`tcp://127.0.0.1:${s.port}`)(), /needs the server's token/);
  await assert.rejects(tcpConnector(`tcp://127.0.0.1:${s.port}?token=nope`)(), /unauthorized: wrong token/);
  s.child.kill('SIGTERM');
  await exitOf(s.child);
});

test('a host other than loopback needs --allow-remote, and is then warned about', async () => {
  const refused = spawn(process.execPath, serveArgs(['--workspace', ws, '--port', '0', '--host', '0.0.0.0']), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RFT_LOG_LEVEL: 'warn' },
  });
  children.push(refused);
  let err = '';
  refused.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  assert.equal(await exitOf(refused), 1);
  assert.match(err, /--host 0\.0\.0\.0 would accept connections from other machines; add --allow-remote/);

  const s = await startTcp(ws, ['--host', '0.0.0.0', '--allow-remote']);
  // stderr is its own pipe: the warning may arrive after the listening line.
  for (let i = 0; i < 100 && !/reachable from other machines/.test(s.stderr()); i++)
    await new Promise((r) => setTimeout(r, 20));
  assert.match(s.stderr(), /reachable from other machines/);
  s.child.kill('SIGTERM');
  await exitOf(s.child);
});

test('malformed, invalid UTF-8, invalid, batch and oversized frames each get an error reply; the connection goes on', async () => {
  const s = await startTcp(ws, ['--max-message-mb', '0.0625']); // 64 KiB
  const token = readFileSync(s.tokenFile, 'utf8').trim();
  const p = await tcpPeer(s.port);
  p.send({ jsonrpc: '2.0', id: 0, method: 'server/auth', params: { token } });
  await p.next();
  const err = async () =>
    (await p.next()) as
      | { id: unknown; error: { code: number; message: string } }
      | { id: unknown; error: { code: number; message: string } }[];

  p.write('Content-Length: 9\r\n\r\n{"jsonrpc');
  let r = await err();
  assert.ok(!Array.isArray(r));
  assert.equal(r.id, null);
  assert.equal(r.error.code, -32700);

  const bad = Buffer.concat([
    Buffer.from('{"jsonrpc":"2.0","id":5,"method":"server/hello","params":{"clientVersion":"'),
    Buffer.from([0xff, 0xfe]),
    Buffer.from('"}}'),
  ]);
  p.write(Buffer.concat([Buffer.from(`Content-Length: ${bad.length}\r\n\r\n`), bad]));
  r = await err();
  assert.ok(!Array.isArray(r));
  assert.equal(r.error.code, -32700, 'invalid UTF-8 is a parse error, not U+FFFD');

  p.send({ jsonrpc: '2.0', id: 6 });
  r = await err();
  assert.ok(!Array.isArray(r));
  assert.deepEqual([r.id, r.error.code], [6, -32600]);

  p.send([
    { jsonrpc: '2.0', id: 7, method: 'server/hello', params: { clientVersion: 't' } },
    { jsonrpc: '2.0', method: 'buffer/changed', params: {} },
    { jsonrpc: '2.0', id: 8, method: 'runs/list', params: {} },
  ]);
  r = await err();
  assert.ok(Array.isArray(r));
  assert.deepEqual(
    r.map((x) => [x.id, x.error.code]),
    [
      [7, -32600],
      [8, -32600],
    ],
  );
  assert.match(r[0]!.error.message, /batch requests are not supported/);

  // 1 MiB against a 64 KiB limit: refused while it streams (not buffered), with a reply.
  const huge = frame({
    jsonrpc: '2.0',
    id: 9,
    method: 'taskset/validate',
    params: { file: 'a.jsonl', text: 'x'.repeat(1 << 20) },
  });
  p.write(huge);
  r = await err();
  assert.ok(!Array.isArray(r));
  assert.equal(r.error.code, -32600);
  assert.match(r.error.message, /message of \d+ bytes is over the limit of 65536 bytes/);

  // Still in sync: the next request is answered.
  p.send({ jsonrpc: '2.0', id: 10, method: 'runs/list', params: {} });
  assert.deepEqual(await p.next(), { jsonrpc: '2.0', id: 10, result: [] });

  // Framing that cannot be followed (no Content-Length): an error reply, then the server closes.
  p.write('Content-Type: nothing\r\n\r\n{}');
  r = await err();
  assert.ok(!Array.isArray(r));
  assert.equal(r.error.code, -32700);
  assert.match(r.error.message, /Content-Length/);
  await p.closed;
  s.child.kill('SIGTERM');
  await exitOf(s.child);
});
