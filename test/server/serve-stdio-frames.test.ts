// The stdio transport (what the extension uses) reads through the same guard as TCP: malformed JSON,
// a batch and an oversized message each get a JSON-RPC error reply and the server goes on; framing
// it cannot follow gets an error reply and the server ends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, serveArgs } from '../../tools/spawn-serve.js';
import { rawPeer } from '../../tools/raw-rpc.js';
import { frame } from '../../backend/server/framing.js';

test('stdio: error replies to malformed, batch and oversized frames; broken framing ends the server', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-stdio-frames-'));
  const child = spawn(process.execPath, serveArgs(['--workspace', ws, '--max-message-mb', '0.0625']), {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
  const p = rawPeer(child.stdout!, child.stdin!, () => child.kill('SIGKILL'));
  type Err = { id: unknown; error: { code: number; message: string } };
  try {
    p.write('Content-Length: 5\r\n\r\n{"a":');
    const a = (await p.next()) as Err;
    assert.deepEqual([a.id, a.error.code], [null, -32700]);

    p.send([{ jsonrpc: '2.0', id: 1, method: 'runs/list', params: {} }]);
    const b = (await p.next()) as Err[];
    assert.deepEqual(
      b.map((x) => [x.id, x.error.code]),
      [[1, -32600]],
    );

    p.write(
      frame({
        jsonrpc: '2.0',
        id: 2,
        method: 'taskset/validate',
        params: { file: 'a.jsonl', text: 'x'.repeat(200_000) },
      }),
    );
    const c = (await p.next()) as Err;
    assert.equal(c.error.code, -32600);
    assert.match(c.error.message, /over the limit of 65536 bytes/);

    p.send({ jsonrpc: '2.0', id: 3, method: 'runs/list', params: {} });
    assert.deepEqual(await p.next(), { jsonrpc: '2.0', id: 3, result: [] });

    p.write('X-Nothing: 1\r\n\r\n');
    const d = (await p.next()) as Err;
    assert.equal(d.error.code, -32700);
    assert.match(d.error.message, /Content-Length/);
    assert.notEqual(
      await Promise.race([exited, new Promise((r) => setTimeout(() => r('still running'), 10_000))]),
      'still running',
      'the server ends',
    );
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
});
