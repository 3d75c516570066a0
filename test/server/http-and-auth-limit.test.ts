// `rft serve` against a web page and a token guesser (issue 40, item 24): an HTTP POST from a page
// (DNS rebinding) was parsed as a JSON-RPC frame, since it carries a Content-Length; and wrong
// tokens could be tried ~1,430 times a second. An HTTP request line or a Host / Origin header now
// ends the connection unserved, and failed authentications are rate-limited (a token bucket).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FrameParser, frame } from '../../backend/server/framing.js';
import { GuardedReader } from '../../backend/server/guarded-reader.js';
import { AuthFailureLimit } from '../../backend/server/auth-limit.js';
import { ErrorCodes } from '../../backend/core/protocol.js';
import { ROOT, serveArgs } from '../../tools/spawn-serve.js';
import { tcpPeer } from '../../tools/raw-rpc.js';

const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

const post = (body: string, headers: string[]) =>
  Buffer.from(
    [...headers, `Content-Length: ${Buffer.byteLength(body)}`, 'Content-Type: application/json', '', body].join('\r\n'),
  );

test('the framing refuses an HTTP request line or a Host / Origin header; a plain frame still passes', () => {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/hello', params: {} });
  const cases: [string[], RegExp][] = [
    [['POST / HTTP/1.1', 'Host: 127.0.0.1:7000'], /an HTTP request \('POST \/ HTTP\/1\.1'\) is not served/],
    [['Host: rebind.example:7000'], /an HTTP header \('Host'\) is not served/],
    [['Origin: http://evil.example'], /an HTTP header \('Origin'\) is not served/],
  ];
  for (const [headers, why] of cases) {
    const f = new FrameParser().push(post(body, headers));
    assert.equal(f.length, 1);
    assert.equal(f[0]!.kind, 'fatal');
    assert.match((f[0] as { reason: string }).reason, why);
  }
  const ok = new FrameParser().push(Buffer.concat([post(body, []), frame({ a: 1 })]));
  assert.deepEqual(
    ok.map((f) => f.kind),
    ['message', 'message'],
  );
});

/** One connection's reader on a stream: the replies it writes and whether it closed the stream. */
function connection(token: string, limit: AuthFailureLimit, given: string) {
  const input = new PassThrough();
  const replies: { error?: { code: number; message: string }; result?: unknown }[] = [];
  let fatal = '';
  let authed = false;
  new GuardedReader(input, (m) => void replies.push(m as never), {
    token,
    authLimit: limit,
    onFatal: (why) => (fatal = why),
    onAuthenticated: () => (authed = true),
  });
  input.write(frame({ jsonrpc: '2.0', id: 1, method: 'server/auth', params: { token: given } }));
  return { replies, fatal: () => fatal, authed: () => authed };
}

test('failed authentications are rate-limited across connections; a right token after the wait gets in', async () => {
  let now = 0;
  const limit = new AuthFailureLimit(3, 1, () => now);
  const token = 'x'.repeat(43);
  for (let i = 0; i < 3; i++) {
    const c = connection(token, limit, `guess-${i}`.padEnd(43, '-'));
    await new Promise((r) => setImmediate(r));
    assert.match(c.replies[0]!.error!.message, /unauthorized: wrong token/);
  }
  // The bucket is empty: even the right token is refused unchecked, with the wait.
  const blocked = connection(token, limit, token);
  await new Promise((r) => setImmediate(r));
  assert.equal(blocked.authed(), false);
  assert.equal(blocked.replies[0]!.error!.code, ErrorCodes.Unauthorized);
  assert.match(blocked.replies[0]!.error!.message, /too many failed authentications: try again in 1 s/);
  now += 1000;
  const ok = connection(token, limit, token);
  await new Promise((r) => setImmediate(r));
  assert.equal(ok.authed(), true);
  assert.deepEqual(ok.replies[0], { jsonrpc: '2.0', id: 1, result: { ok: true } });
});

test('rft serve --port: an HTTP POST carrying the right token is not served', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-http-'));
  const child = spawn(process.execPath, serveArgs(['--workspace', ws, '--port', '0']), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.push(child);
  const l = await new Promise<{ listening: number; tokenFile: string }>((res) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('\n')) res(JSON.parse(out.slice(0, out.indexOf('\n'))));
    });
  });
  const token = readFileSync(l.tokenFile, 'utf8').trim();
  const p = await tcpPeer(l.listening);
  const auth = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/auth', params: { token } });
  p.write(post(auth, ['POST / HTTP/1.1', `Host: 127.0.0.1:${l.listening}`, 'Origin: http://rebind.example']));
  const r = (await p.next()) as { error?: { message: string }; result?: unknown };
  assert.equal(r.result, undefined);
  assert.match(r.error!.message, /an HTTP request .* is not served/);
  await p.closed;
  child.kill('SIGTERM');
});
