// Issue 40 item 14: a trainer cut off from the database (a pulled cable: silence, no error) waited for
// TCP to give up and logged nothing about the database. Now the store's pool limits each query, so a
// silent link fails as a connection error, is retried on a fresh connection, and the outage is logged
// once when it starts and once when it ends. The cut here is a TCP relay in front of a real PostgreSQL
// that, while cut, drops every byte both ways and holds new connections open without answering.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { PostgresStore } from '../../../backend/buffer/storage/postgres.js';
import { reconnecting } from '../../../backend/buffer/queue/retry.js';
import { LinkWatch } from '../../../backend/coordinator/distributed/link-watch.js';
import { setLogSink } from '../../../backend/core/log.js';
import { makeExp, pgSchemaUrl, startPg } from '../../buffer/storage-helpers.js';

/** A relay to host:port whose link can be cut (bytes dropped, nothing closed) and restored. */
async function relay(host: string, port: number) {
  let cut = false;
  const socks = new Set<net.Socket>();
  const server = net.createServer((a) => {
    socks.add(a);
    const b = net.connect(port, host);
    socks.add(b);
    a.on('data', (d) => void (cut || b.write(d)));
    b.on('data', (d) => void (cut || a.write(d)));
    const end = () => (a.destroy(), b.destroy());
    a.on('error', end).on('close', end);
    b.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => void (cut = true),
    // Connections made during the cut stay dead (their handshake bytes are gone), like TCP after a long cut.
    restore: () => void (cut = false),
    close: async () => {
      for (const s of socks) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

async function until(what: string, ok: () => boolean): Promise<void> {
  // A bound on the wait only (the test's own timeout would also end it): not a timing assertion.
  for (let i = 0; i < 600 && !ok(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(ok(), `never: ${what}`);
}

test('a store cut off from the database: the query fails and is retried, the outage is logged once at its start and once at its end', async (t) => {
  const server = startPg();
  if ('skip' in server) return t.skip(server.skip);
  const url = new URL(pgSchemaUrl(server.url));
  const r = await relay(url.hostname, Number(url.port || 5432));
  url.hostname = '127.0.0.1';
  url.port = String(r.port);
  const lines: string[] = [];
  const level = process.env.RFT_LOG_LEVEL;
  process.env.RFT_LOG_LEVEL = 'info'; // the end of an outage is an info line
  setLogSink((level, scope, msg) => void lines.push(`${level} ${scope}: ${msg}`));
  const raw = await PostgresStore.open(url.toString(), { queryTimeoutMs: 1000 });
  try {
    const link = new LinkWatch();
    let retries = 0;
    const store = reconnecting(raw, link.retry({ onRetry: () => void retries++ }));
    await store.appendExperiences([makeExp('e1', { runId: 'r' })]);
    r.cut();
    let answered = false;
    const during = store.count().then((n) => ((answered = true), n));
    // Without a query limit the count waits on the silent socket and nothing is said.
    await until('an outage line', () => lines.some((l) => /database unreachable since/.test(l)));
    const start = lines.filter((l) => /database unreachable since/.test(l));
    assert.match(
      start[0]!,
      /^warn dist-trainer: database unreachable since \d{4}-\d\d-\d\dT[\d:.]+Z: .+ \(retrying\)$/,
    );
    assert.equal(answered, false);
    // Retries go on while cut (a fresh connection each time, each failing): still one line.
    await until('a second failed attempt', () => retries >= 2);
    r.restore();
    assert.equal(await during, 1);
    assert.equal(lines.filter((l) => /database unreachable since/.test(l)).length, 1, lines.join('\n'));
    const back = lines.filter((l) => /database back after/.test(l));
    assert.equal(back.length, 1, lines.join('\n'));
    assert.match(back[0]!, /^info dist-trainer: database back after \d+ s$/);
  } finally {
    if (level === undefined) delete process.env.RFT_LOG_LEVEL;
    else process.env.RFT_LOG_LEVEL = level;
    setLogSink((level, scope, msg) => process.stderr.write(`${level} ${scope}: ${msg}\n`));
    await r.close(); // first: a query still waiting on the relay ends with its socket
    await raw.close();
    await server.stop();
  }
});
