// The backend client against a real `rft serve` child: typed requests, restart after kill -9,
// listeners kept across restarts, giving up on a backend that keeps dying.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname } from 'node:path';
import { BackendClient, type BackendState } from '../../src/backend/client.js';
import { RestartPolicy } from '../../src/backend/restart-policy.js';
import { childConnector, type Exit } from '../../src/backend/transport.js';
import { makeBuffer } from '../../tools/make-buffer.js';
import { ROOT, serveArgs } from '../../tools/spawn-serve.js';

const quietLog = {
  lines: [] as string[],
  info(m: string) {
    this.lines.push(m);
  },
  warn(m: string) {
    this.lines.push(m);
  },
  error(m: string) {
    this.lines.push(m);
  },
};

function waitFor(client: BackendClient, state: BackendState, ms = 20_000): Promise<void> {
  if (client.state === state) return Promise.resolve();
  return new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error(`state stayed ${client.state}, wanted ${state}`)), ms);
    const d = client.onState((s) => {
      if (s === state) {
        clearTimeout(t);
        d.dispose();
        res();
      }
    });
  });
}

test('talks to rft serve, restarts it after kill -9, keeps notification listeners', async () => {
  const buffer = await makeBuffer(10);
  let pid = 0;
  const connector = childConnector({
    node: process.execPath,
    args: serveArgs(['--workspace', dirname(buffer)]),
    cwd: ROOT,
    env: { RFT_LOG_LEVEL: 'info' },
  });
  const client = new BackendClient(
    async () => {
      const t = await connector();
      pid = Number(t.describe.replace('pid ', ''));
      return t;
    },
    {
      clientVersion: 't',
      log: quietLog,
      policy: new RestartPolicy({ baseDelayMs: 50, maxDelayMs: 50, maxRestarts: 3, windowMs: 60_000 }),
    },
  );
  const logs: string[] = [];
  client.onNotification('log/line', (l) => logs.push(l.msg));
  try {
    await client.start();
    assert.equal(client.state, 'running');
    assert.equal(client.capabilities?.buffer, true);
    const o = await client.request('buffer/open', { path: buffer });
    assert.equal(o.counts.usual, 10);

    const firstPid = pid;
    process.kill(firstPid, 'SIGKILL');
    await waitFor(client, 'restarting');
    await waitFor(client, 'running');
    assert.notEqual(pid, firstPid);
    assert.equal(client.starts, 2);
    // The new backend works, and the listener registered before the crash still receives lines.
    const c = await client.request('buffer/list', { buffer: { path: buffer }, offset: 0, limit: 3 });
    assert.equal(c.total, 10);
    assert.equal(logs.filter((m) => m.includes('serving JSON-RPC')).length, 2, JSON.stringify(logs));
  } finally {
    await client.dispose();
  }
});

test('gives up after repeated crashes and reports the stderr tail', async () => {
  let gaveUp: Exit | undefined;
  const client = new BackendClient(
    childConnector({
      node: process.execPath,
      args: ['-e', 'console.error("boom: cannot open buffer"); process.exit(3)'],
      cwd: ROOT,
    }),
    {
      clientVersion: 't',
      log: quietLog,
      policy: new RestartPolicy({ baseDelayMs: 10, maxDelayMs: 10, maxRestarts: 2, windowMs: 60_000 }),
      onGiveUp: (e) => (gaveUp = e),
    },
  );
  await client.start().catch(() => undefined);
  await waitFor(client, 'failed');
  assert.ok(gaveUp);
  assert.equal(gaveUp.code, 3);
  assert.match(gaveUp.stderrTail.join('\n'), /boom: cannot open buffer/);
  assert.equal(client.starts, 3); // first start + 2 restarts
  await client.dispose();
});
