// Weights in S3-compatible object storage: the SigV4 signer against the worked examples of AWS's S3
// documentation, then the store against a real S3-compatible server on loopback (s3rver, an npm
// devDependency that runs in Node): publish by sha256, fetch + verify, a tampered object refused,
// a wrong access key and an unreachable endpoint as errors that say so, removal.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import { signV4, EMPTY_SHA256 } from '../../backend/coordinator/distributed/sigv4.js';
import { S3WeightsStore, credentialsFromEnv, s3Spec } from '../../backend/coordinator/distributed/weights-s3.js';
import { fetchFromStore, publishWithRetry } from '../../backend/coordinator/distributed/weights-store.js';
import { checksumDir } from '../../backend/coordinator/distributed/weights.js';
import { WeightsFetchError } from '../../backend/coordinator/distributed/weights-http.js';

const root = mkdtempSync(join(tmpdir(), 'rft-s3-'));
after(() => rmSync(root, { recursive: true, force: true }));

// https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html (example calculations)
const AWS_EXAMPLE = {
  accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
  secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
};
const NOW = new Date('2013-05-24T00:00:00Z');
const sig = (h: Record<string, string>) => /Signature=([0-9a-f]{64})$/.exec(h.authorization!)![1];

test('SigV4: the GET Object, PUT Object and List Objects examples of the S3 documentation', () => {
  const get = signV4(
    {
      method: 'GET',
      url: new URL('https://examplebucket.s3.amazonaws.com/test.txt'),
      headers: { Range: 'bytes=0-9' },
      payloadSha256: EMPTY_SHA256,
      region: 'us-east-1',
      now: NOW,
    },
    AWS_EXAMPLE,
  );
  assert.equal(sig(get), 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41');
  assert.match(
    get.authorization!,
    /^AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE\/20130524\/us-east-1\/s3\/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, /,
  );
  const put = signV4(
    {
      method: 'PUT',
      url: new URL('https://examplebucket.s3.amazonaws.com/test$file.text'),
      headers: { Date: 'Fri, 24 May 2013 00:00:00 GMT', 'x-amz-storage-class': 'REDUCED_REDUNDANCY' },
      payloadSha256: '44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072',
      region: 'us-east-1',
      now: NOW,
    },
    AWS_EXAMPLE,
  );
  assert.equal(sig(put), '98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd');
  const list = signV4(
    {
      method: 'GET',
      url: new URL('https://examplebucket.s3.amazonaws.com/?max-keys=2&prefix=J'),
      payloadSha256: EMPTY_SHA256,
      region: 'us-east-1',
      now: NOW,
    },
    AWS_EXAMPLE,
  );
  assert.equal(sig(list), '34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7');
});

test('s3 spec and credentials: errors name the flag or the variables', () => {
  assert.throws(() => s3Spec('s3://B', { endpoint: 'http://x:1' }), /--weights: 's3:\/\/B' is not s3:\/\/BUCKET/);
  assert.throws(() => s3Spec('s3://bucket/p', {}, {}), /--s3-endpoint/);
  assert.throws(() => s3Spec('s3://bucket/p', { endpoint: 'ftp://x' }, {}), /must be http/);
  assert.deepEqual(
    s3Spec('s3://bucket/a/b/', {}, { AWS_ENDPOINT_URL: 'http://127.0.0.1:9000/', AWS_REGION: 'eu-west-1' }),
    { kind: 's3', endpoint: 'http://127.0.0.1:9000', bucket: 'bucket', prefix: 'a/b', region: 'eu-west-1' },
  );
  assert.throws(() => credentialsFromEnv({ AWS_ACCESS_KEY_ID: 'x' }), /AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY/);
});

function folder(name: string, files: Record<string, string | Buffer>): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  for (const [f, b] of Object.entries(files)) writeFileSync(join(d, f), b);
  return d;
}

test(
  'S3 store on a real S3-compatible server (s3rver): publish, fetch and verify, tamper, forbidden, unreachable, remove',
  { timeout: 60_000 },
  async () => {
    const data = join(root, 's3data');
    const server = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: data,
      configureBuckets: [{ name: 'weights' }],
    });
    const { port } = await server.run();
    try {
      const spec = s3Spec('s3://weights/team/rft', { endpoint: `http://127.0.0.1:${port}` }, {});
      const store = new S3WeightsStore(spec, { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, { env: {} });
      const big = Buffer.alloc(3 * 1024 * 1024 + 17);
      for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
      const src = folder('v1', {
        'rft.json': '{"version":1}',
        'weights.bin': big,
        'tokenizer.json': '{"kind":"char"}',
      });
      const sum = checksumDir(src);
      await store.publish('R', src, sum);
      await store.publish('R', src, sum); // idempotent
      // The objects are where the docs say: PREFIX/RUN/SHA256/NAME, the manifest with them.
      const got = await fetchFromStore(store, 'R', sum, join(root, 'cache', sum));
      assert.equal(checksumDir(got), sum);
      assert.deepEqual(readdirSync(got).sort(), ['rft.json', 'tokenizer.json', 'weights.bin']);
      // A version another run published is not this run's.
      await assert.rejects(
        fetchFromStore(store, 'OTHER', sum, join(root, 'cache2', sum)),
        (e: Error) => e instanceof WeightsFetchError && /HTTP 404 NoSuchKey \(not in the store/.test(e.message),
      );
      // An object changed in the store after publishing: the download is refused, nothing left behind.
      const tampered = folder('v2', { 'rft.json': '{"version":2}', 'weights.bin': 'abc' });
      const sum2 = checksumDir(tampered);
      await store.publish('R', tampered, sum2);
      await store.publish('R', folder('v2x', { 'rft.json': '{"version":2}', 'weights.bin': 'abd' }), sum2); // same address, other bytes
      const dest2 = join(root, 'cache3', sum2);
      await assert.rejects(fetchFromStore(store, 'R', sum2, dest2), /downloaded sha256 .* is not the address/);
      assert.deepEqual(readdirSync(join(root, 'cache3')), [], 'no partial folder');
      // Credentials the server does not know: 403 with the service's code and what to check.
      const bad = new S3WeightsStore(spec, { accessKeyId: 'NOPE', secretAccessKey: 'x' }, { env: {} });
      await assert.rejects(
        fetchFromStore(bad, 'R', sum, join(root, 'cache4', sum)),
        /HTTP 403 InvalidAccessKeyId \(credentials refused: check AWS_ACCESS_KEY_ID/,
      );
      await assert.rejects(bad.publish('R', src, sum), /HTTP 403 InvalidAccessKeyId/);
      // Removal: the version is gone (404), another one stays.
      await store.remove('R', sum);
      await store.remove('R', sum); // twice is fine
      await assert.rejects(fetchFromStore(store, 'R', sum, join(root, 'cache5', sum)), /HTTP 404/);
      assert.ok(existsSync(join(root, 'cache', sum)), 'a fetched copy stays usable');
    } finally {
      await server.close();
    }
    // Nobody listening: an error naming the endpoint, at once.
    const gone = new S3WeightsStore(
      s3Spec('s3://weights', { endpoint: `http://127.0.0.1:${port}` }, {}),
      { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
      { env: {} },
    );
    await assert.rejects(
      fetchFromStore(gone, 'R', 'a'.repeat(64), join(root, 'cache6', 'x')),
      /s3:\/\/weights\/R\/a+\/manifest.json \(http:\/\/127.0.0.1:\d+\): ECONNREFUSED/,
    );
  },
);

test('publishing retries while the S3 server is down and lands once it is back', { timeout: 60_000 }, async () => {
  const data = join(root, 's3retry');
  const first = new S3rver({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory: data,
    configureBuckets: [{ name: 'weights' }],
  });
  const { port } = await first.run();
  await first.close();
  const store = new S3WeightsStore(
    s3Spec('s3://weights/p', { endpoint: `http://127.0.0.1:${port}` }, {}),
    { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    { env: {} },
  );
  const src = folder('retry', { 'rft.json': '{"version":4}', 'weights.bin': 'xyz' });
  const sum = checksumDir(src);
  const failures: string[] = [];
  const publishing = publishWithRetry(store, 'R', src, sum, {
    everyMs: 300,
    maxMs: 30_000,
    onFail: (e) => void failures.push(e.message),
  });
  await new Promise((r) => setTimeout(r, 1500));
  const second = new S3rver({
    port,
    address: '127.0.0.1',
    silent: true,
    directory: data,
    configureBuckets: [{ name: 'weights' }],
  });
  await second.run();
  try {
    const attempts = await publishing;
    assert.ok(attempts >= 2 && failures.length === attempts - 1, `${attempts} attempts, ${failures.length} failures`);
    assert.match(failures[0]!, /ECONNREFUSED/);
    assert.equal(checksumDir(await fetchFromStore(store, 'R', sum, join(root, 'cache-retry', sum))), sum);
    // And a store that stays down: the error comes back after maxMs.
    await second.close();
    await assert.rejects(publishWithRetry(store, 'R', src, sum, { everyMs: 100, maxMs: 500 }), /ECONNREFUSED/);
  } finally {
    await second.close().catch(() => undefined);
  }
});
