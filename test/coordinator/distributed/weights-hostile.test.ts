// A hostile weights server (issue 40, item 22): a listing that never ends grew to 512 MB and failed
// with an unnamed RangeError; a body trickled under the idle timeout, or a slow listing, had no
// overall deadline; a body larger than the listing said was written to disk whole before the
// checksum refused it. Each is now refused by a named error, within its bound, and nothing of it is
// kept in the cache. The limits are small here so that each bound is reached quickly.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync } from 'node:fs';
import { createServer, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fetchWeights, WeightsFetchError } from '../../../backend/coordinator/distributed/weights-http.js';

const SUM = 'a'.repeat(64);
type Handler = (file: string, res: ServerResponse) => void;
let handler: Handler = (_f, res) => res.end();
const timers = new Set<NodeJS.Timeout>();
const server = createServer((req, res) => {
  const m = /^\/weights\/[0-9a-f]{64}\/(.*)$/.exec(req.url ?? '');
  res.on('close', () => {
    for (const t of timers) clearInterval(t);
  });
  handler(m?.[1] ?? '', res);
});
const port = await new Promise<number>((r) =>
  server.listen(0, '127.0.0.1', () => r((server.address() as { port: number }).port)),
);
after(() => {
  for (const t of timers) clearInterval(t);
  server.closeAllConnections();
  server.close();
});
const src = { url: `http://127.0.0.1:${port}`, token: 't' };
const base = `${src.url}/weights/${SUM}/`;

/** Sends CHUNK every MS until the client goes away. */
function trickle(res: ServerResponse, chunk: string, ms: number): void {
  const t = setInterval(() => res.write(chunk), ms);
  timers.add(t);
}

async function refused(limits: Parameters<typeof fetchWeights>[5], why: RegExp): Promise<void> {
  const cache = mkdtempSync(join(tmpdir(), 'rft-hostile-weights-'));
  await assert.rejects(fetchWeights(src, SUM, cache, 5000, {}, limits), (e: Error) => {
    assert.ok(e instanceof WeightsFetchError, `${e.name}: ${e.message}`);
    assert.match(e.message, why);
    return true;
  });
  assert.deepEqual(readdirSync(cache), [], 'nothing of a refused download is kept');
}

test('an endless listing is refused at its size cap, by name', async () => {
  handler = (_f, res) => {
    res.writeHead(200);
    res.write('{"files": [');
    trickle(res, `{"name": "x", "size": 1},`.repeat(1000), 1);
  };
  await refused(
    { listingBytes: 64 * 1024 },
    new RegExp(`^${base}: the listing is over 65536 bytes: not a weights listing$`),
  );
});

test('a listing trickled under the idle timeout is stopped at its deadline', async () => {
  handler = (_f, res) => {
    res.writeHead(200);
    trickle(res, ' ', 100);
  };
  await refused({ listingMs: 1000 }, new RegExp(`^${base}: the listing did not arrive in 1 s$`));
});

const listing = (res: ServerResponse, size: number) =>
  res.end(JSON.stringify({ files: [{ name: 'model.safetensors', size }] }));

test('a body trickled under the idle timeout is stopped at the deadline for its listed size', async () => {
  handler = (f, res) => {
    if (!f) return listing(res, 100);
    res.writeHead(200);
    trickle(res, 'x', 100);
  };
  await refused(
    { fileBaseMs: 1000, minBytesPerSecond: 1000 },
    new RegExp(`^${base}model\\.safetensors: not downloaded in 1\\.1 s \\(the deadline for its 100 bytes\\)$`),
  );
});

test('a body larger than the listing is cut off as it arrives; a Content-Length that differs is refused first', async () => {
  handler = (f, res) => {
    if (!f) return listing(res, 10);
    res.writeHead(200);
    // No Content-Length: chunked, and more than listed.
    trickle(res, 'x'.repeat(64 * 1024), 1);
  };
  await refused({}, new RegExp(`^${base}model\\.safetensors: more than the listing's 10 bytes: refused$`));
  handler = (f, res) => {
    if (!f) return listing(res, 10);
    res.writeHead(200, { 'content-length': String(300 * 1024 * 1024) });
    trickle(res, 'x'.repeat(64 * 1024), 1);
  };
  await refused({}, new RegExp(`^${base}model\\.safetensors: Content-Length 314572800 is not the listing's 10 bytes$`));
});

test('a listing entry without a byte count is not a listing', async () => {
  handler = (_f, res) => res.end(JSON.stringify({ files: [{ name: 'model.safetensors' }] }));
  await refused({}, new RegExp(`^${base}: not a weights listing$`));
});
