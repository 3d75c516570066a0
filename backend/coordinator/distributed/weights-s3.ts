// Weights in S3-compatible object storage: the trainer (and the coordinator, for v0) uploads each
// version's files under PREFIX/RUN/SHA256/ and a manifest.json last (a version without its manifest
// is not there yet); explorers and a trainer on any machine download them by sha256 and verify.
// Requests are path-style (ENDPOINT/BUCKET/KEY) and signed with SigV4; credentials come from the
// standard environment variables of each process, never from the run's record.
import { InputError } from '../../core/errors.js';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, readdirSync, statSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { EMPTY_SHA256, signV4, uriEncode, type S3Credentials } from './sigv4.js';
import { WeightsFetchError } from './weights-http.js';
import type { S3StoreSpec, WeightsStore } from './weights-store.js';
import { readRegularFile } from '../../core/regular-file.js';

const FILE = /^[A-Za-z0-9._-]+$/;

/** AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN) of this process. */
export function credentialsFromEnv(env: NodeJS.ProcessEnv = process.env): S3Credentials {
  const accessKeyId = env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey)
    throw new InputError(
      'S3 weights store: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment of this process (credentials are never stored in the run)',
    );
  return { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN || undefined };
}

/**
 * The store of `--weights s3://BUCKET/PREFIX`: the endpoint from `--s3-endpoint` or AWS_ENDPOINT_URL_S3 /
 * AWS_ENDPOINT_URL, the region from `--s3-region` or AWS_REGION / AWS_DEFAULT_REGION (default us-east-1).
 */
export function s3Spec(
  weights: string,
  o: { endpoint?: string; region?: string },
  env: NodeJS.ProcessEnv = process.env,
): S3StoreSpec {
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(weights);
  if (!m)
    throw new InputError(
      `--weights: '${weights}' is not s3://BUCKET[/PREFIX] (a bucket name is 3-63 lower-case letters, digits, dots, hyphens)`,
    );
  const endpoint = o.endpoint ?? env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  if (!endpoint)
    throw new InputError(
      '--s3-endpoint: the S3-compatible service, e.g. https://s3.eu-west-1.amazonaws.com or http://10.0.0.5:9000 (or AWS_ENDPOINT_URL)',
    );
  let u: URL;
  try {
    u = new URL(endpoint);
  } catch {
    throw new InputError(`--s3-endpoint: '${endpoint}' is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new InputError(`--s3-endpoint: '${endpoint}' must be http:// or https://`);
  const prefix = (m[2] ?? '').replace(/^\/+|\/+$/g, '');
  return {
    kind: 's3',
    endpoint: u.origin,
    bucket: m[1]!,
    prefix,
    region: o.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1',
  };
}

function fileSha256(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (c) => h.update(c))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', reject);
  });
}

export class S3WeightsStore implements WeightsStore {
  readonly where: string;
  private readonly ca: string | undefined;

  constructor(
    private readonly spec: S3StoreSpec,
    private readonly creds: S3Credentials,
    private readonly o: { idleMs?: number; env?: NodeJS.ProcessEnv } = {},
  ) {
    this.where = `s3://${spec.bucket}/${spec.prefix ? spec.prefix + '/' : ''} at ${spec.endpoint}`;
    // AWS_CA_BUNDLE: the CLI's variable for a private CA of an https endpoint.
    const bundle = (o.env ?? process.env).AWS_CA_BUNDLE;
    this.ca = bundle ? readRegularFile(bundle, 'utf8', 16 << 20) : undefined;
  }

  private key(runId: string, checksum: string, name: string): string {
    return [this.spec.prefix, runId, checksum, name].filter(Boolean).join('/');
  }

  private send(
    method: 'GET' | 'PUT' | 'DELETE',
    key: string,
    body?: { file?: string; data?: Buffer; sha256: string },
  ): Promise<IncomingMessage> {
    const url = new URL(`${this.spec.endpoint}/${uriEncode(this.spec.bucket, false)}/${uriEncode(key, true)}`);
    const what = `s3://${this.spec.bucket}/${key} (${this.spec.endpoint})`;
    const idleMs = this.o.idleMs ?? 5000;
    const extra: Record<string, string> = body
      ? {
          'content-length': String(body.data ? body.data.length : statSync(body.file!).size),
          'content-type': 'application/octet-stream',
        }
      : {};
    const headers = signV4(
      { method, url, headers: extra, payloadSha256: body?.sha256 ?? EMPTY_SHA256, region: this.spec.region },
      this.creds,
    );
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
      method,
      headers,
      timeout: idleMs,
      agent: false,
      ...(this.ca ? { ca: this.ca } : {}),
    });
    return new Promise((resolve, reject) => {
      req.on('response', (res) => {
        if (res.statusCode && res.statusCode >= 200 && res.statusCode < 300) return resolve(res);
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => void (text.length < 4096 && (text += c)));
        res.on('end', () => {
          const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
          const hint =
            res.statusCode === 403
              ? ' (credentials refused: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY and the bucket policy)'
              : res.statusCode === 404
                ? ' (not in the store: pruned, or never published)'
                : '';
          reject(new WeightsFetchError(`${what}: HTTP ${res.statusCode}${code ? ' ' + code : ''}${hint}`));
        });
        res.on('error', () => reject(new WeightsFetchError(`${what}: HTTP ${res.statusCode}`)));
      });
      req.on('timeout', () => req.destroy(new WeightsFetchError(`${what}: no answer for ${idleMs / 1000} s`)));
      req.on('error', (e) =>
        reject(
          e instanceof WeightsFetchError
            ? e
            : new WeightsFetchError(`${what}: ${(e as NodeJS.ErrnoException).code ?? e.message}`),
        ),
      );
      if (body?.file)
        createReadStream(body.file)
          .on('error', (e) => req.destroy(e))
          .pipe(req);
      else req.end(body?.data);
    });
  }

  private async put(key: string, file: string): Promise<void> {
    (await this.send('PUT', key, { file, sha256: await fileSha256(file) })).resume();
  }

  async publish(runId: string, dir: string, checksum: string): Promise<void> {
    const files = readdirSync(dir)
      .filter((f) => FILE.test(f) && f !== 'manifest.json' && statSync(join(dir, f)).isFile())
      .sort();
    for (const f of files) await this.put(this.key(runId, checksum, f), join(dir, f));
    // The manifest last: a reader that finds it finds every file.
    const data = Buffer.from(
      JSON.stringify({
        sha256: checksum,
        files: files.map((name) => ({ name, size: statSync(join(dir, name)).size })),
      }),
    );
    (
      await this.send('PUT', this.key(runId, checksum, 'manifest.json'), {
        data,
        sha256: createHash('sha256').update(data).digest('hex'),
      })
    ).resume();
  }

  private async manifest(runId: string, checksum: string): Promise<{ name: string; size: number }[]> {
    const key = this.key(runId, checksum, 'manifest.json');
    let text = '';
    for await (const c of await this.send('GET', key)) text += c;
    try {
      const files = (JSON.parse(text) as { files: { name: string; size: number }[] }).files;
      if (!Array.isArray(files) || files.some((f) => !FILE.test(f.name) || f.name === 'manifest.json'))
        throw new Error();
      return files;
    } catch {
      throw new WeightsFetchError(`s3://${this.spec.bucket}/${key}: not a weights manifest`);
    }
  }

  async download(runId: string, checksum: string, into: string): Promise<void> {
    for (const f of await this.manifest(runId, checksum)) {
      const key = this.key(runId, checksum, f.name);
      try {
        await pipeline(await this.send('GET', key), createWriteStream(join(into, f.name)));
      } catch (e) {
        throw e instanceof WeightsFetchError
          ? e
          : new WeightsFetchError(
              `s3://${this.spec.bucket}/${key}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`,
            );
      }
    }
  }

  async remove(runId: string, checksum: string): Promise<void> {
    let files: { name: string }[];
    try {
      files = await this.manifest(runId, checksum);
    } catch {
      return; // gone already, or never complete
    }
    // The manifest first: a half-removed version is never taken for a whole one.
    (await this.send('DELETE', this.key(runId, checksum, 'manifest.json'))).resume();
    for (const f of files) (await this.send('DELETE', this.key(runId, checksum, f.name))).resume();
  }
}
