// Published weights of a distributed run: the folder checksum, pruning, the verified load, and the
// HTTP path (a real server on loopback and the real client): content-addressed fetch, verification
// of what arrived, the token, 404 after pruning, and a source that is not there.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../../backend/model/engine.js';
import { makeConfig } from '../../../backend/model/config.js';
import { Transformer } from '../../../backend/model/transformer.js';
import { saveCheckpoint } from '../../../backend/model/checkpoint.js';
import { CharTokenizer } from '../../../backend/model/tokenizer/index.js';
import {
  ChecksumError,
  checksumDir,
  loadVerified,
  pruneVersions,
  versionDir,
} from '../../../backend/coordinator/distributed/weights.js';
import {
  fetchWeights,
  WeightsFetchError,
  WeightsServer,
} from '../../../backend/coordinator/distributed/weights-http.js';
import { WeightsLoader } from '../../../backend/coordinator/distributed/weights-load.js';

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-dist-weights-'));
after(() => rmSync(root, { recursive: true, force: true }));

async function publish(dir: string, version: number): Promise<string> {
  const m = new Transformer(
    makeConfig({ vocabSize: 300, dModel: 8, nLayers: 1, nHeads: 2, nKvHeads: 1, dFF: 12, maxSeqLen: 16 }),
    5 + version,
  );
  await saveCheckpoint(m, dir, { version, step: version }, CharTokenizer.fromAlphabet('abc'));
  m.dispose();
  return checksumDir(dir);
}

test('checksum covers names and bytes; a changed file is refused at load; pruning keeps v0 and the newest', async () => {
  const w = join(root, 'w1');
  const sum = await publish(versionDir(w, 'r', 1), 1);
  assert.match(sum, /^[0-9a-f]{64}$/);
  assert.equal(checksumDir(versionDir(w, 'r', 1)), sum, 'stable');
  const ck = loadVerified(versionDir(w, 'r', 1), sum);
  assert.equal(ck.meta.version, 1);
  ck.model.dispose();
  writeFileSync(join(versionDir(w, 'r', 1), 'rft.json'), '{"version":1,"step":99}');
  assert.throws(() => loadVerified(versionDir(w, 'r', 1), sum), ChecksumError);
  assert.throws(() => loadVerified(join(w, 'nope'), sum), /not visible from this host/);
  for (const v of [0, 2, 3, 4, 5]) mkdirSync(versionDir(w, 'r', v), { recursive: true });
  pruneVersions(w, 'r', 5, 2);
  assert.deepEqual(readdirSync(join(w, 'r')).sort(), ['v0', 'v4', 'v5']);
});

test('over HTTP: fetched by sha256, verified, cached; token, pruned version and tampering refused', async () => {
  const w = join(root, 'w2');
  const dir = versionDir(w, 'r', 3);
  const sum = await publish(dir, 3);
  const server = new WeightsServer();
  server.add(sum, dir);
  const port = await server.listen(0, '127.0.0.1');
  const src = { url: `http://127.0.0.1:${port}`, token: server.token };
  const cache = join(root, 'cache2');
  try {
    const got = await fetchWeights(src, sum, cache);
    assert.equal(got, join(cache, sum));
    assert.equal(checksumDir(got), sum);
    assert.deepEqual(readdirSync(got).sort(), readdirSync(dir).sort());
    assert.equal(
      await fetchWeights({ ...src, url: 'http://127.0.0.1:1' }, sum, cache),
      got,
      'a cached, verified copy needs no server',
    );
    rmSync(cache, { recursive: true });
    await assert.rejects(fetchWeights({ ...src, token: 'x' }, sum, cache), /HTTP 401/);
    await assert.rejects(fetchWeights(src, 'a'.repeat(64), cache), /HTTP 404/);
    await assert.rejects(fetchWeights(src, 'not-a-sha', cache), WeightsFetchError);
    // The served folder changes under its address (a damaged disk): what arrives is not what was asked for.
    writeFileSync(join(dir, 'rft.json'), '{"version":3,"step":1}');
    await assert.rejects(fetchWeights(src, sum, cache), ChecksumError);
    assert.deepEqual(existsSync(cache) ? readdirSync(cache) : [], [], 'a refused download leaves nothing behind');
    rmSync(dir, { recursive: true });
    await assert.rejects(fetchWeights(src, sum, cache), /HTTP 404.*pruned/);
  } finally {
    await server.close();
  }
  // Nobody listening, and a server that accepts and never answers: both fail, naming the address.
  await assert.rejects(
    fetchWeights(src, sum, cache),
    (e: Error) => e instanceof WeightsFetchError && /ECONNREFUSED/.test(e.message),
  );
  const silent = createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const sPort = (silent.address() as { port: number }).port;
  try {
    await assert.rejects(
      fetchWeights({ url: `http://127.0.0.1:${sPort}`, token: 't' }, sum, cache, 300),
      /no answer for 0.3 s/,
    );
  } finally {
    silent.closeAllConnections();
    silent.close();
  }
});

test('the loader: the recorded folder when this host sees it, else HTTP; neither is an error naming both', async () => {
  const w = join(root, 'w3');
  const dir = versionDir(w, 'r', 2);
  const sum = await publish(dir, 2);
  const server = new WeightsServer();
  server.add(sum, dir);
  const port = await server.listen(0, '127.0.0.1');
  const http = { url: `http://127.0.0.1:${port}`, token: server.token };
  const loader = new WeightsLoader(join(root, 'cache3'));
  try {
    const a = await loader.load({ version: 2, path: dir, checksum: sum }, http);
    assert.equal(a.from, 'folder');
    a.ck.model.dispose();
    // Another machine: the recorded path does not exist here.
    const b = await loader.load({ version: 2, path: join(root, 'elsewhere', 'v2'), checksum: sum }, http);
    assert.equal(b.from, 'http');
    assert.equal(b.ck.meta.version, 2);
    b.ck.model.dispose();
    await assert.rejects(
      loader.load({ version: 2, path: join(root, 'elsewhere', 'v2'), checksum: sum }, null),
      /not visible from this host, and the trainer serves no weights over HTTP/,
    );
  } finally {
    loader.dispose();
    await server.close();
  }
  assert.equal(existsSync(join(root, 'cache3')), false, 'the cache goes with the worker');
});
