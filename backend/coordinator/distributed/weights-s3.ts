// Weights in S3-compatible object storage: the trainer (and the coordinator, for v0) uploads each
// version's files under PREFIX/RUN/SHA256/ and a manifest.json last (a version without its manifest
// is not there yet); explorers and a trainer on any machine download them by sha256 and verify.
// Through the AWS SDK (@aws-sdk/client-s3, @aws-sdk/lib-storage), imported only by the processes that
// use S3: multipart uploads for large files, the standard credential chain of each process (env,
// shared profiles, SSO, instance and container roles; never the run's record), retries with backoff,
// path-style or virtual-hosted addressing.
import { InputError } from '../../core/errors.js';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, readdirSync, statSync } from 'node:fs';
import { Agent as HttpsAgent } from 'node:https';
import { join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { WeightsFetchError } from './weights-http.js';
import type { S3StoreSpec, WeightsStore } from './weights-store.js';
import { readRegularFile } from '../../core/regular-file.js';

// The SDK warns on every process under Node < 22 that its releases after January 2027 will need 22; this
// project pins the SDK (package.json) and supports Node 20 (VS Code's), so the warning says nothing to act on.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const FILE = /^[A-Za-z0-9._-]+$/;
/** Files up to this size go in one PUT; larger ones as a multipart upload of parts this size. */
export const PART_SIZE = 8 * 1024 * 1024;

/** Explicit keys (tests; otherwise the SDK's default chain finds them). */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
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

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
}

/** What went wrong, as the operator acts on it: the service's status and code, or the network's. */
function describe(e: unknown, what: string): WeightsFetchError {
  if (e instanceof WeightsFetchError) return e;
  const x = (e ?? {}) as SdkError;
  const status = x.$metadata?.httpStatusCode;
  if (status !== undefined && status >= 300) {
    // HEAD answers carry no body: the SDK names them by status ('NotFound', 'Forbidden').
    const code = x.name && x.name !== 'Unknown' && !/^\d+$/.test(x.name) ? ` ${x.name}` : '';
    const hint =
      status === 403
        ? ' (credentials refused: check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or the profile, and the bucket policy)'
        : status === 404
          ? ' (not in the store: pruned, or never published)'
          : '';
    return new WeightsFetchError(`${what}: HTTP ${status}${code}${hint}`);
  }
  const net = x.code ?? (x.name === 'TimeoutError' ? 'timed out' : undefined) ?? x.message ?? String(e);
  return new WeightsFetchError(`${what}: ${net}`);
}

export class S3WeightsStore implements WeightsStore {
  readonly where: string;
  private readonly client: S3Client;

  /**
   * CREDS: explicit keys, else the SDK's default chain of this process. `partSize` (tests), `maxAttempts`
   * per request (retries with backoff: a store down for a moment costs a retry, not the step),
   * `idleMs` per request, `onFile` after each file is in the store (or found there already).
   */
  constructor(
    private readonly spec: S3StoreSpec,
    creds?: S3Credentials,
    private readonly o: {
      idleMs?: number;
      env?: NodeJS.ProcessEnv;
      partSize?: number;
      maxAttempts?: number;
      onFile?: (name: string, how: 'uploaded' | 'multipart' | 'present') => void;
      /** Each S3 operation as the SDK sends it (PutObjectCommand, UploadPartCommand, …): logs and tests. */
      onRequest?: (command: string) => void;
    } = {},
  ) {
    const at = spec.endpoint ?? `AWS ${spec.region}`;
    this.where = `s3://${spec.bucket}/${spec.prefix ? spec.prefix + '/' : ''} at ${at}`;
    // AWS_CA_BUNDLE: the CLI's variable for a private CA of an https endpoint (the JS SDK does not read it).
    const bundle = (o.env ?? process.env).AWS_CA_BUNDLE;
    const idleMs = o.idleMs ?? 15_000;
    const config: S3ClientConfig = {
      region: spec.region,
      ...(spec.endpoint ? { endpoint: spec.endpoint } : {}),
      forcePathStyle: (spec.addressing ?? (spec.endpoint ? 'path' : 'virtual')) === 'path',
      maxAttempts: o.maxAttempts ?? 4,
      retryMode: 'standard',
      ...(creds ? { credentials: creds } : {}),
      requestHandler: {
        connectionTimeout: idleMs,
        requestTimeout: idleMs,
        ...(bundle ? { httpsAgent: new HttpsAgent({ ca: readRegularFile(bundle, 'utf8', 16 << 20) }) } : {}),
      },
    };
    this.client = new S3Client(config);
    const onRequest = o.onRequest;
    if (onRequest)
      this.client.middlewareStack.add(
        (next, context) => (args) => {
          onRequest(String(context.commandName));
          return next(args);
        },
        { step: 'initialize', name: 'rftOnRequest' },
      );
  }

  /**
   * The credentials this process would use, resolved now: a process without any is refused at start,
   * naming where they can come from, instead of at its first upload.
   */
  async checkCredentials(): Promise<void> {
    try {
      await this.client.config.credentials();
    } catch (e) {
      throw new InputError(
        `S3 weights store: no credentials in this process (${(e as Error).message.split('\n')[0]}): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (shared config and credentials files, SSO), or run with an instance or container role; credentials are never stored in the run`,
      );
    }
  }

  private key(runId: string, checksum: string, name: string): string {
    return [this.spec.prefix, runId, checksum, name].filter(Boolean).join('/');
  }

  private what(key: string): string {
    return `s3://${this.spec.bucket}/${key} (${this.spec.endpoint ?? `AWS ${this.spec.region}`})`;
  }

  /** The object's sha256 as this store wrote it, if it is there with SIZE bytes. */
  private async present(key: string, size: number): Promise<string | undefined> {
    try {
      const h = await this.client.send(new HeadObjectCommand({ Bucket: this.spec.bucket, Key: key }));
      return h.ContentLength === size ? h.Metadata?.sha256 : undefined;
    } catch (e) {
      // Not there, or not readable by these keys: the upload then says which (HEAD answers carry no code).
      const status = (e as SdkError).$metadata?.httpStatusCode;
      if (status === 404 || status === 403) return undefined;
      throw describe(e, this.what(key));
    }
  }

  private async putFile(key: string, file: string, name: string): Promise<void> {
    const size = statSync(file).size;
    const sha256 = await fileSha256(file);
    // Published before (an earlier attempt that the store or this process did not see through): kept.
    if ((await this.present(key, size)) === sha256) return this.o.onFile?.(name, 'present');
    const partSize = this.o.partSize ?? PART_SIZE;
    try {
      await new Upload({
        client: this.client,
        params: {
          Bucket: this.spec.bucket,
          Key: key,
          Body: createReadStream(file),
          ContentType: 'application/octet-stream',
          Metadata: { sha256 },
        },
        partSize,
        queueSize: 4,
        // A failed multipart upload is aborted: no orphaned parts billed in the bucket.
        leavePartsOnError: false,
      }).done();
    } catch (e) {
      throw describe(e, this.what(key));
    }
    this.o.onFile?.(name, size > partSize ? 'multipart' : 'uploaded');
  }

  async publish(runId: string, dir: string, checksum: string): Promise<void> {
    const files = readdirSync(dir)
      .filter((f) => FILE.test(f) && f !== 'manifest.json' && statSync(join(dir, f)).isFile())
      .sort();
    for (const f of files) await this.putFile(this.key(runId, checksum, f), join(dir, f), f);
    // The manifest last: a reader that finds it finds every file.
    const body = Buffer.from(
      JSON.stringify({
        sha256: checksum,
        files: files.map((name) => ({ name, size: statSync(join(dir, name)).size })),
      }),
    );
    const key = this.key(runId, checksum, 'manifest.json');
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.spec.bucket, Key: key, Body: body, ContentType: 'application/json' }),
      );
    } catch (e) {
      throw describe(e, this.what(key));
    }
  }

  private async get(key: string) {
    try {
      return await this.client.send(new GetObjectCommand({ Bucket: this.spec.bucket, Key: key }));
    } catch (e) {
      throw describe(e, this.what(key));
    }
  }

  private async manifest(runId: string, checksum: string): Promise<{ name: string; size: number }[]> {
    const key = this.key(runId, checksum, 'manifest.json');
    const res = await this.get(key);
    // A manifest is a few hundred bytes: a larger one is not ours.
    if ((res.ContentLength ?? 0) > 1 << 20) throw new WeightsFetchError(`${this.what(key)}: not a weights manifest`);
    const text = await res.Body!.transformToString('utf8');
    try {
      const files = (JSON.parse(text) as { files: { name: string; size: number }[] }).files;
      if (
        !Array.isArray(files) ||
        files.some(
          (f) => !FILE.test(f.name) || f.name === 'manifest.json' || !Number.isSafeInteger(f.size) || f.size < 0,
        )
      )
        throw new Error();
      return files;
    } catch {
      throw new WeightsFetchError(`${this.what(key)}: not a weights manifest`);
    }
  }

  async download(runId: string, checksum: string, into: string): Promise<void> {
    for (const f of await this.manifest(runId, checksum)) {
      const key = this.key(runId, checksum, f.name);
      const res = await this.get(key);
      // The manifest's size, before and while the bytes come: an object that grew is refused unread.
      if (res.ContentLength !== undefined && res.ContentLength !== f.size)
        throw new WeightsFetchError(
          `${this.what(key)}: ${res.ContentLength} bytes in the store, the manifest says ${f.size}`,
        );
      let seen = 0;
      const what = this.what(key);
      const cap = new Transform({
        transform(chunk: Buffer, _enc, done) {
          seen += chunk.length;
          done(
            seen > f.size ? new WeightsFetchError(`${what}: more than the manifest's ${f.size} bytes`) : null,
            chunk,
          );
        },
      });
      try {
        await pipeline(res.Body as NodeJS.ReadableStream, cap, createWriteStream(join(into, f.name)));
      } catch (e) {
        throw describe(e, this.what(key));
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
    for (const name of ['manifest.json', ...files.map((f) => f.name)]) {
      const key = this.key(runId, checksum, name);
      try {
        await this.client.send(new DeleteObjectCommand({ Bucket: this.spec.bucket, Key: key }));
      } catch (e) {
        throw describe(e, this.what(key));
      }
    }
  }

  close(): void {
    this.client.destroy();
  }
}
