// A FIFO in the workspace stopped the whole backend (issue 40, item 17): `config/validate` on it
// blocked the server's main thread in open(), so no other client could even authenticate, and
// four `taskset/validate` on FIFOs took libuv's whole thread pool, after which every validation
// hung. Now each such request answers at once with an error naming the file, and another client
// is served meanwhile. (A bounded wait in the peer turns a regression into a failure, not a hang.)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, serveArgs } from '../../tools/spawn-serve.js';
import { tcpPeer, type RawPeer } from '../../tools/raw-rpc.js';

const hasMkfifo = spawnSync('mkfifo', ['--version']).status === 0;
const children: ChildProcess[] = [];
after(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

function startTcp(ws: string): Promise<{ port: number; token: string }> {
  const child = spawn(process.execPath, serveArgs(['--workspace', ws, '--port', '0']), {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, RFT_LOG_LEVEL: 'error' },
  });
  children.push(child);
  child.stderr!.resume();
  return new Promise((res, rej) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const nl = out.indexOf('\n');
      if (nl >= 0) {
        const l = JSON.parse(out.slice(0, nl)) as { listening: number; tokenFile: string };
        res({ port: l.listening, token: readFileSync(l.tokenFile, 'utf8').trim() });
      }
    });
    child.once('exit', (c) => rej(new Error(`serve exited ${c}`)));
  });
}

async function authed(port: number, token: string): Promise<RawPeer> {
  const p = await tcpPeer(port);
  p.send({ jsonrpc: '2.0', id: 'auth', method: 'server/auth', params: { token } });
  assert.deepEqual(await p.next(), { jsonrpc: '2.0', id: 'auth', result: { ok: true } });
  return p;
}

interface Reply {
  id: number;
  result?: { tasks: number; issues: { message: string }[] };
  error?: { message: string };
}

test(
  'a FIFO named in config/validate or taskset/validate is refused by name; other clients are served meanwhile',
  { skip: !hasMkfifo && 'no mkfifo' },
  async () => {
    const ws = mkdtempSync(join(tmpdir(), 'rft-special-serve-'));
    for (const f of ['run.rft.yaml', 'a.jsonl', 'b.jsonl', 'c.jsonl', 'd.jsonl', 'e.jsonl'])
      assert.equal(spawnSync('mkfifo', [join(ws, f)]).status, 0);
    writeFileSync(join(ws, 'good.jsonl'), '{"id":"a","prompt":"1+1","answer":"2"}\n');
    const s = await startTcp(ws);

    // Client A asks about the FIFOs: the config first, then more taskset validations than libuv has threads.
    const a = await authed(s.port, s.token);
    a.send({ jsonrpc: '2.0', id: 1, method: 'config/validate', params: { file: 'run.rft.yaml' } });
    const fifos = ['a', 'b', 'c', 'd', 'e'];
    fifos.forEach((f, i) =>
      a.send({ jsonrpc: '2.0', id: 10 + i, method: 'taskset/validate', params: { file: `${f}.jsonl` } }),
    );

    // Client B connects, authenticates and validates a normal file.
    const b = await authed(s.port, s.token);
    b.send({ jsonrpc: '2.0', id: 2, method: 'taskset/validate', params: { file: 'good.jsonl' } });
    const good = (await b.next(30_000)) as Reply;
    assert.equal(good.result?.tasks, 1, JSON.stringify(good));
    b.destroy();

    // Every request of A is answered, each naming its file.
    const replies = new Map<number, Reply>();
    for (let i = 0; i < 1 + fifos.length; i++) {
      const r = (await a.next(30_000)) as Reply;
      replies.set(r.id, r);
    }
    assert.match(replies.get(1)!.error!.message, /run\.rft\.yaml: is a FIFO \(named pipe\), not a file/);
    fifos.forEach((f, i) => {
      const r = replies.get(10 + i)!;
      assert.equal(r.result?.tasks, 0);
      assert.match(r.result!.issues[0]!.message, new RegExp(`${f}\\.jsonl: is a FIFO \\(named pipe\\), not a file`));
    });
    a.destroy();
  },
);
