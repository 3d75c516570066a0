// Weights over HTTP from the trainer's host, so explorers need no shared folder. Content-addressed:
// a published version is fetched by its folder's sha256 (the checksum the trainer records in the
// database), never by a name that could change under the reader. Each file is downloaded into a
// temp folder, the folder's sha256 is checked against the address, and only then is it renamed into
// place: a cut or damaged download is never loaded. Requests carry the run's bearer token (kept in the
// database, so whoever can read the run can fetch its weights, and nobody else). With a certificate
// and key the server speaks HTTPS, and explorers check it (a CA file, or the certificate's sha256
// pinned) before the token leaves them.
import { InfrastructureError } from '../../core/errors.js';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createServer, get, type IncomingMessage, type RequestOptions, type Server } from 'node:http';
import { createServer as createHttpsServer, get as httpsGet } from 'node:https';
import { X509Certificate } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ChecksumError, checksumDir } from './weights.js';

/** Where explorers fetch a run's weights: recorded by the trainer in run_state `dist:weights-http`. */
export interface HttpWeightsSource {
  url: string;
  token: string;
  /** HTTPS: the server's certificate (PEM) and its sha256 fingerprint (hex), recorded by the trainer. */
  tls?: { cert: string; sha256: string };
}

/** The trainer's certificate and key (PEM text) for HTTPS. */
export interface ServerTls {
  cert: string;
  key: string;
}

/**
 * How an explorer checks the trainer's certificate: `ca` (PEM: a CA that signed it, hostname checked
 * as usual), else the certificate's sha256 (`pin`, default the one the trainer recorded): only that
 * exact certificate is accepted.
 */
export interface ClientTls {
  ca?: string;
  pin?: string;
}

/** sha256 fingerprint of a PEM certificate, lower-case hex without colons. */
export function certSha256(pem: string): string {
  return new X509Certificate(pem).fingerprint256.replace(/:/g, '').toLowerCase();
}

const SHA = /^[0-9a-f]{64}$/;
// Checkpoint folders are flat; anything else in a request is refused.
const FILE = /^[A-Za-z0-9._-]+$/;

/** Serves the folders it was told about (sha256 -> folder); a pruned folder is a 404. */
export class WeightsServer {
  private readonly dirs = new Map<string, string>();
  private server: Server | null = null;
  readonly token = randomBytes(16).toString('hex');

  add(checksum: string, dir: string): void {
    if (SHA.test(checksum)) this.dirs.set(checksum, dir);
  }

  /** Listens on all interfaces; returns the port (0 picks a free one). HTTPS with `tls`. */
  listen(port = 0, host = '0.0.0.0', tls?: ServerTls): Promise<number> {
    const handler: Parameters<typeof createServer>[1] = (req, res) => {
      const send = (code: number, body: string) => {
        res.writeHead(code, { 'content-type': code === 200 ? 'application/json' : 'text/plain' });
        res.end(body);
      };
      if (req.method !== 'GET') return send(405, 'GET only\n');
      if (req.headers.authorization !== `Bearer ${this.token}`) return send(401, 'bad or missing token\n');
      const m = /^\/weights\/([0-9a-f]{64})\/([^/]*)$/.exec(req.url ?? '');
      const dir = m ? this.dirs.get(m[1]!) : undefined;
      if (!m || !dir || !existsSync(dir)) {
        if (m && dir) this.dirs.delete(m[1]!);
        return send(404, 'no such weights (pruned, or never published here)\n');
      }
      const name = m[2]!;
      if (name === '') {
        const files = readdirSync(dir)
          .filter((f) => FILE.test(f) && statSync(join(dir, f)).isFile())
          .map((f) => ({ name: f, size: statSync(join(dir, f)).size }));
        return send(200, JSON.stringify({ files }));
      }
      const file = join(dir, name);
      if (!FILE.test(name) || !existsSync(file)) return send(404, 'no such file\n');
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(statSync(file).size) });
      createReadStream(file)
        .on('error', () => res.destroy())
        .pipe(res);
    };
    const server: Server = tls ? createHttpsServer({ cert: tls.cert, key: tls.key }, handler) : createServer(handler);
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve((server.address() as { port: number }).port);
      });
    });
  }

  close(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return Promise.resolve();
    s.closeAllConnections();
    return new Promise((r) => s.close(() => r()));
  }
}

/** The address other machines reach this one at: the first non-internal IPv4 (loopback if none). */
export function defaultAdvertisedHost(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return '127.0.0.1';
}

/** A fetch failure (unreachable, refused, timed out, 404, bad token): the explorer reports it and tries again. */
export class WeightsFetchError extends InfrastructureError {}

/** TLS options of a request to an https:// source: checked in the handshake, before the token is sent. */
function tlsOptions(src: HttpWeightsSource, tls: ClientTls): RequestOptions & Record<string, unknown> {
  if (tls.ca) return { ca: tls.ca };
  const pin = (tls.pin ?? src.tls?.sha256 ?? '').replace(/:/g, '').toLowerCase();
  if (!src.tls?.cert || !pin)
    throw new WeightsFetchError(
      `${src.url}: HTTPS without a recorded certificate: give the explorer --weights-ca FILE`,
    );
  if (certSha256(src.tls.cert) !== pin)
    throw new WeightsFetchError(
      `${src.url}: the trainer's recorded certificate (sha256 ${certSha256(src.tls.cert).slice(0, 16)}…) is not the pinned ${pin.slice(0, 16)}…`,
    );
  // The recorded certificate is the only trust anchor, and the one presented must be exactly it
  // (its sha256), whatever host name it was issued for.
  return {
    ca: src.tls.cert,
    checkServerIdentity: (_host: string, cert: { fingerprint256: string }) =>
      cert.fingerprint256.replace(/:/g, '').toLowerCase() === pin
        ? undefined
        : new Error(`certificate sha256 ${cert.fingerprint256} is not the pinned one`),
  };
}

/**
 * Bounds on what a weights server may send (a hostile or broken one trickled bodies under the idle
 * timeout, sent an endless listing, or more bytes than it listed). Each has a default for real runs.
 */
export interface FetchLimits {
  /** The listing: its whole request, and its size. */
  listingMs?: number;
  listingBytes?: number;
  /** Each file: this much time, plus its listed size at `minBytesPerSecond` (the slowest link served). */
  fileBaseMs?: number;
  minBytesPerSecond?: number;
}

const LIMITS: Required<FetchLimits> = {
  listingMs: 30_000,
  listingBytes: 1 << 20,
  fileBaseMs: 60_000,
  minBytesPerSecond: 1 << 20,
};

/** A request's deadline: aborts its connection and body; `why` names it in the error. */
function deadline(ms: number, why: string): { signal: AbortSignal; error: () => WeightsFetchError; done: () => void } {
  const ac = new AbortController();
  const err = new WeightsFetchError(why);
  const t = setTimeout(() => ac.abort(err), ms);
  return { signal: ac.signal, error: () => err, done: () => clearTimeout(t) };
}

function request(
  url: string,
  token: string,
  idleMs: number,
  tls?: RequestOptions,
  signal?: AbortSignal,
): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    // agent false: a fresh connection per request (a pooled socket to a restarted trainer fails as a reset).
    const opts = {
      headers: { authorization: `Bearer ${token}` },
      timeout: idleMs,
      agent: false as const,
      ...tls,
      ...(signal ? { signal } : {}),
    };
    const req = (url.startsWith('https:') ? httpsGet : get)(url, opts, (res) => {
      if (res.statusCode === 200) return resolve(res);
      res.resume();
      reject(
        new WeightsFetchError(
          `${url}: HTTP ${res.statusCode}${res.statusCode === 404 ? ' (pruned, or the trainer restarted)' : res.statusCode === 401 ? ' (token refused)' : ''}`,
        ),
      );
    });
    // `timeout` is socket inactivity: a dead link fails after idleMs, a slow one that still moves does not.
    req.on('timeout', () => req.destroy(new WeightsFetchError(`${url}: no answer for ${idleMs / 1000} s`)));
    req.on('error', (e) =>
      reject(
        signal?.aborted && signal.reason instanceof WeightsFetchError
          ? signal.reason
          : e instanceof WeightsFetchError
            ? e
            : new WeightsFetchError(`${url}: ${(e as NodeJS.ErrnoException).code ?? e.message}`),
      ),
    );
  });
}

/**
 * Fetch the weights with this sha256 into `cacheDir/<sha256>` (or find them there), verified.
 * Returns the folder.
 */
export async function fetchWeights(
  src: HttpWeightsSource,
  checksum: string,
  cacheDir: string,
  idleMs = 5000,
  clientTls: ClientTls = {},
  limits: FetchLimits = {},
): Promise<string> {
  const lim = { ...LIMITS, ...limits };
  if (!SHA.test(checksum))
    throw new WeightsFetchError(`recorded checksum '${checksum}' is not a sha256: cannot fetch by content`);
  const dest = join(cacheDir, checksum);
  if (existsSync(dest) && checksumDir(dest) === checksum) return dest;
  const base = `${src.url.replace(/\/$/, '')}/weights/${checksum}/`;
  const tls = src.url.startsWith('https:') ? tlsOptions(src, clientTls) : undefined;
  const files = await readListing(base, src.token, idleMs, tls, lim);
  mkdirSync(cacheDir, { recursive: true });
  const tmp = join(cacheDir, `${checksum}.part-${randomBytes(4).toString('hex')}`);
  mkdirSync(tmp);
  try {
    for (const f of files) {
      await download(base + f.name, f.size, join(tmp, f.name), src.token, idleMs, tls, lim);
    }
    const got = checksumDir(tmp);
    if (got !== checksum)
      throw new ChecksumError(
        `${base}: downloaded sha256 ${got.slice(0, 12)}… is not the address ${checksum.slice(0, 12)}…`,
      );
    rmSync(dest, { recursive: true, force: true });
    renameSync(tmp, dest);
    return dest;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The listing of a version's files, within its deadline and size cap; each entry a flat name and a byte count. */
async function readListing(
  url: string,
  token: string,
  idleMs: number,
  tls: RequestOptions | undefined,
  lim: Required<FetchLimits>,
): Promise<{ name: string; size: number }[]> {
  const d = deadline(lim.listingMs, `${url}: the listing did not arrive in ${lim.listingMs / 1000} s`);
  const chunks: Buffer[] = [];
  let n = 0;
  try {
    const res = await request(url, token, idleMs, tls, d.signal);
    for await (const chunk of res as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      n += chunk.length;
      if (n > lim.listingBytes) {
        res.destroy();
        throw new WeightsFetchError(`${url}: the listing is over ${lim.listingBytes} bytes: not a weights listing`);
      }
    }
  } catch (e) {
    throw d.signal.aborted ? d.error() : asFetchError(url, e);
  } finally {
    d.done();
  }
  try {
    const files = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { files: { name: string; size: number }[] })
      .files;
    if (!Array.isArray(files)) throw new Error('no files');
    for (const f of files)
      if (!FILE.test(f.name) || !Number.isSafeInteger(f.size) || f.size < 0) throw new Error('bad entry');
    return files;
  } catch {
    throw new WeightsFetchError(`${url}: not a weights listing`);
  }
}

const asFetchError = (url: string, e: unknown): WeightsFetchError =>
  e instanceof WeightsFetchError
    ? e
    : new WeightsFetchError(`${url}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);

/**
 * One file into FILE: its Content-Length and its bytes held to the listing's SIZE as they arrive
 * (a server sending more is cut off at once, not after the disk has taken it), within a deadline
 * for its size.
 */
async function download(
  url: string,
  size: number,
  file: string,
  token: string,
  idleMs: number,
  tls: RequestOptions | undefined,
  lim: Required<FetchLimits>,
): Promise<void> {
  const ms = lim.fileBaseMs + Math.ceil((size / lim.minBytesPerSecond) * 1000);
  const d = deadline(ms, `${url}: not downloaded in ${ms / 1000} s (the deadline for its ${size} bytes)`);
  let got = 0;
  try {
    const res = await request(url, token, idleMs, tls, d.signal);
    const declared = res.headers['content-length'];
    if (declared !== undefined && Number(declared) !== size) {
      res.destroy();
      throw new WeightsFetchError(`${url}: Content-Length ${declared} is not the listing's ${size} bytes`);
    }
    const count = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        got += chunk.length;
        if (got > size) cb(new WeightsFetchError(`${url}: more than the listing's ${size} bytes: refused`));
        else cb(null, chunk);
      },
    });
    await pipeline(res, count, createWriteStream(file));
  } catch (e) {
    throw d.signal.aborted ? d.error() : asFetchError(url, e);
  } finally {
    d.done();
  }
  if (got !== size) throw new WeightsFetchError(`${url}: ${got} bytes, the listing said ${size}`);
}

/** Remove cached versions other than `keep` (and leftovers of cut downloads). */
export function pruneCache(cacheDir: string, keep: string): void {
  if (!existsSync(cacheDir)) return;
  for (const name of readdirSync(cacheDir))
    if (name !== keep) rmSync(join(cacheDir, name), { recursive: true, force: true });
}
