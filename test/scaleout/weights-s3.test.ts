// Weights in S3-compatible object storage through the AWS SDK, against a real S3-compatible server on
// loopback (s3rver, an npm devDependency that runs in Node): publish by sha256, fetch + verify, a
// tampered object refused, a wrong access key and an unreachable endpoint as errors that say so,
// removal; a multipart upload of a file larger than one part; credentials from a shared profile; a
// publish that resumes after the store restarted mid-upload without sending the finished files again.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';
import pg from 'pg';
import { S3Client, HeadObjectCommand } from '@aws-sdk/client-s3';
import { S3WeightsStore } from '../../backend/coordinator/distributed/weights-s3.js';
import { s3Spec } from '../../backend/coordinator/distributed/s3-spec.js';
import { fetchFromStore, publishWithRetry } from '../../backend/coordinator/distributed/weights-store.js';
import { checksumDir } from '../../backend/coordinator/distributed/weights.js';
import { WeightsFetchError } from '../../backend/coordinator/distributed/weights-http.js';
import { TrainerWeights } from '../../backend/coordinator/distributed/weights-trainer.js';
import { publishFailures, type TrainerStatus } from '../../backend/coordinator/placement/distributed-run.js';

const root = mkdtempSync(join(tmpdir(), 'rft-s3-'));
after(() => rmSync(root, { recursive: true, force: true }));

test('s3 spec: errors name the flag; an endpoint of its own is path-style, AWS virtual-hosted', () => {
  assert.throws(() => s3Spec('s3://B', { endpoint: 'http://x:1' }), /--weights: 's3:\/\/B' is not s3:\/\/BUCKET/);
  assert.throws(() => s3Spec('s3://bucket/p', { endpoint: 'ftp://x' }, {}), /must be http/);
  assert.throws(
    () => s3Spec('s3://bucket/p', { addressing: 'dns' }, {}),
    /--s3-addressing: 'dns' is not path or virtual/,
  );
  assert.deepEqual(
    s3Spec('s3://bucket/a/b/', {}, { AWS_ENDPOINT_URL: 'http://127.0.0.1:9000/', AWS_REGION: 'eu-west-1' }),
    {
      kind: 's3',
      endpoint: 'http://127.0.0.1:9000',
      bucket: 'bucket',
      prefix: 'a/b',
      region: 'eu-west-1',
      addressing: 'path',
    },
  );
  assert.deepEqual(s3Spec('s3://bucket', {}, { AWS_REGION: 'eu-west-1' }), {
    kind: 's3',
    bucket: 'bucket',
    prefix: '',
    region: 'eu-west-1',
    addressing: 'virtual',
  });
  assert.equal(
    s3Spec('s3://bucket', { endpoint: 'https://s3.example', addressing: 'virtual' }, {}).addressing,
    'virtual',
  );
});

/** Runs FN with only these AWS_* variables in the environment (the SDK's chain reads process.env). */
async function withAwsEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('AWS_')));
  for (const k of Object.keys(saved)) delete process.env[k];
  // No instance-metadata probe on a machine that is not one; no ~/.aws of the person running the tests.
  Object.assign(process.env, {
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_SHARED_CREDENTIALS_FILE: join(root, 'no-credentials'),
    AWS_CONFIG_FILE: join(root, 'no-config'),
    ...vars,
  });
  try {
    return await fn();
  } finally {
    for (const k of Object.keys(process.env)) if (k.startsWith('AWS_')) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

test('credentials: none anywhere is refused at start naming where they come from', async () => {
  await withAwsEnv({}, async () => {
    const store = new S3WeightsStore(s3Spec('s3://bucket', { endpoint: 'http://127.0.0.1:1' }, {}));
    await assert.rejects(
      store.checkCredentials(),
      /no credentials in this process .*set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE/,
    );
    store.close();
  });
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

test(
  'multipart: a file larger than one part goes up in parts, with credentials from a shared profile; a publish resumes after the store restarted mid-upload, keeping the finished files',
  { timeout: 120_000 },
  async () => {
    const data = join(root, 's3multi');
    const start = (port = 0) =>
      new S3rver({
        port,
        address: '127.0.0.1',
        silent: true,
        directory: data,
        configureBuckets: [{ name: 'weights' }],
      });
    let server = start();
    const { port } = await server.run();
    const credentials = join(root, 'aws-credentials');
    writeFileSync(credentials, '[rft-ci]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n');
    try {
      await withAwsEnv({ AWS_PROFILE: 'rft-ci', AWS_SHARED_CREDENTIALS_FILE: credentials }, async () => {
        const spec = s3Spec('s3://weights/mp', { endpoint: `http://127.0.0.1:${port}` }, {});
        const events: string[] = [];
        const sent: string[] = [];
        const MiB = 1024 * 1024;
        // No keys given: the SDK's chain finds the profile.
        const store = new S3WeightsStore(spec, undefined, {
          env: {},
          partSize: 5 * MiB,
          maxAttempts: 2,
          onFile: (name, how) => void events.push(`${name}:${how}`),
          onRequest: (c) => void sent.push(c),
        });
        await store.checkCredentials();
        const big = Buffer.alloc(12 * MiB + 3);
        for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
        const src = folder('multi', {
          'a-small.json': '{"version":7}',
          'b-weights.bin': big,
          'c-tokenizer.json': '{}',
        });
        const sum = checksumDir(src);
        await store.publish('R', src, sum);
        assert.deepEqual(events, ['a-small.json:uploaded', 'b-weights.bin:multipart', 'c-tokenizer.json:uploaded']);
        // 12 MiB in parts of 5 MiB: three parts, between a create and a complete; the small files in one PUT.
        const count = (c: string) => sent.filter((x) => x === c).length;
        assert.equal(count('CreateMultipartUploadCommand'), 1, sent.join(', '));
        assert.equal(count('UploadPartCommand'), 3);
        assert.equal(count('CompleteMultipartUploadCommand'), 1);
        assert.equal(count('PutObjectCommand'), 3, 'two small files and the manifest');
        const raw = new S3Client({
          region: 'us-east-1',
          endpoint: `http://127.0.0.1:${port}`,
          forcePathStyle: true,
          credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
        });
        const head = await raw.send(new HeadObjectCommand({ Bucket: 'weights', Key: `mp/R/${sum}/b-weights.bin` }));
        assert.equal(head.ContentLength, big.length);
        raw.destroy();
        assert.equal(checksumDir(await fetchFromStore(store, 'R', sum, join(root, 'cache-mp', sum))), sum);

        // Another version; the store goes down once its first file is in, and comes back 1.5 s later.
        const src2 = folder('multi2', {
          'a-small.json': '{"version":8}',
          'b-weights.bin': Buffer.concat([big, Buffer.from('v8')]),
          'c-tokenizer.json': '{}',
        });
        const sum2 = checksumDir(src2);
        events.length = 0;
        let restarted: Promise<void> | undefined;
        const flaky = new S3WeightsStore(spec, undefined, {
          env: {},
          partSize: 5 * MiB,
          maxAttempts: 1,
          onFile: (name, how) => {
            events.push(`${name}:${how}`);
            if (!restarted)
              restarted = (async () => {
                await server.close();
                await new Promise((r) => setTimeout(r, 1500));
                server = start(port);
                await server.run();
              })();
          },
        });
        const failures: string[] = [];
        await publishWithRetry(flaky, 'R', src2, sum2, {
          everyMs: 300,
          maxMs: 60_000,
          onFail: (e) => void failures.push(e.message),
        });
        await restarted;
        assert.ok(
          failures.length >= 1 && /ECONNREFUSED|ECONNRESET|socket hang up|EPIPE/.test(failures[0]!),
          failures.join('\n'),
        );
        assert.equal(events.filter((e) => e === 'a-small.json:uploaded').length, 1, `sent once: ${events.join(', ')}`);
        assert.ok(events.includes('a-small.json:present'), `found in the store on the retry: ${events.join(', ')}`);
        assert.ok(events.includes('b-weights.bin:multipart'));
        assert.equal(checksumDir(await fetchFromStore(flaky, 'R', sum2, join(root, 'cache-mp2', sum2))), sum2);
        store.close();
        flaky.close();
      });
    } finally {
      await server.close().catch(() => undefined);
    }
  },
);

test(
  "while S3 is down the trainer's row is `error` with the last publish failure, and its state comes back after",
  { timeout: 60_000 },
  async () => {
    // Issue 40 item 16: `rft workers` showed the trainer `syncing` and no error while S3 was down.
    const data = join(root, 's3status');
    const first = new S3rver({
      port: 0,
      address: '127.0.0.1',
      silent: true,
      directory: data,
      configureBuckets: [{ name: 'weights' }],
    });
    const { port } = await first.run();
    await first.close();
    const env = {
      AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID,
      AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY,
    };
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    const pool = new pg.Pool(); // the database copy of v0 only; never queried here
    let second: S3rver | null = null;
    try {
      const spec = s3Spec('s3://weights/p', { endpoint: `http://127.0.0.1:${port}` }, {});
      const tw = await TrainerWeights.open(
        'R',
        async <T>(k: string) => (k === 'dist:weights-store' ? (spec as T) : null),
        pool,
        [],
        join(root, 'tw'),
      );
      const status: TrainerStatus = { state: 'syncing', detail: 'v4', version: 3, steps: 4 };
      const shown = publishFailures(status, 4, tw.object!.where);
      const src = folder('status', { 'rft.json': '{"version":4}', 'weights.bin': 'abc' });
      const publishing = tw.publish(4, src, checksumDir(src), 3, undefined, shown.onFail);
      for (let i = 0; i < 200 && status.state !== 'error'; i++) await new Promise((r) => setTimeout(r, 50));
      assert.equal(status.state, 'error');
      assert.match(status.detail, /^publishing v4 to s3:\/\/weights\/p.* \(attempt 1\): .*ECONNREFUSED.*; retrying$/);
      second = new S3rver({
        port,
        address: '127.0.0.1',
        silent: true,
        directory: data,
        configureBuckets: [{ name: 'weights' }],
      });
      await second.run();
      await publishing;
      shown.done();
      assert.deepEqual([status.state, status.detail], ['syncing', 'v4']);
    } finally {
      await second?.close().catch(() => undefined);
      await pool.end();
      for (const [k, v] of Object.entries(env))
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
    }
  },
);
