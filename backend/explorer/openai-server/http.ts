// The HTTP server of the OpenAI surface: bearer-token check, body size, concurrent requests and
// request timeout limits, JSON parsing, and every failure answered as an OpenAI error object (a
// bad request never takes the server down).
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DEFAULT_LIMITS, type ServeLimits } from './completions.js';
import { ApiError, badRequest } from './errors.js';
import type { EpisodeBook } from './episodes.js';
import type { PolicyGate } from './policy.js';
import { postRewards } from './rewards.js';
import type { RewardFn } from '../workflow.js';
import { handleGet, handlePost, sendError, type RouteContext } from './routes.js';

/** How long an idle keep-alive connection is kept (well past the clients' own idle timeouts). */
const KEEP_ALIVE_MS = 65_000;

export interface OpenAIServerOptions {
  gate: PolicyGate;
  token: string;
  host?: string;
  /** 0: any free port. */
  port?: number;
  limits?: Partial<ServeLimits>;
  episodes?: EpisodeBook;
  /** A reward function from the config (workflow.reward), for rewards posted without a value. */
  rewardFn?: RewardFn;
}

export interface OpenAIServer {
  /** http://HOST:PORT/v1, what a client takes as its base URL. */
  baseURL: string;
  server: Server;
  close(): Promise<void>;
}

function authorized(req: IncomingMessage, token: string): boolean {
  const h = req.headers.authorization ?? '';
  const m = /^Bearer (.+)$/.exec(h);
  if (!m) return false;
  const got = Buffer.from(m[1]!);
  const want = Buffer.from(token);
  return got.length === want.length && timingSafeEqual(got, want);
}

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > max)
      return reject(
        new ApiError(
          413,
          `the request body is ${declared} bytes, over this server's limit of ${max}`,
          'invalid_request_error',
          null,
          'request_too_large',
        ),
      );
    const parts: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (b: Buffer) => {
      if (over) return;
      size += b.length;
      if (size > max) {
        // Not destroyed here: the client must get its 413 (the connection closes after it, and the
        // rest of the body is discarded meanwhile).
        over = true;
        parts.length = 0;
        reject(
          new ApiError(
            413,
            `the request body is over this server's limit of ${max} bytes`,
            'invalid_request_error',
            null,
            'request_too_large',
          ),
        );
        return;
      }
      parts.push(b);
    });
    req.on('end', () => resolve(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

export async function startOpenAIServer(o: OpenAIServerOptions): Promise<OpenAIServer> {
  const limits: ServeLimits = { ...DEFAULT_LIMITS, ...o.limits };
  const ctx: RouteContext = {
    gate: o.gate,
    limits,
    started: Math.floor(Date.now() / 1000),
    episodes: o.episodes,
    extra: o.episodes ? { '/v1/rft/rewards': (body) => postRewards(o.episodes!, body, o.rewardFn) } : undefined,
  };
  let active = 0;
  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = (req.url ?? '/').split('?')[0]!.replace(/\/+$/, '');
    if (!authorized(req, o.token))
      throw new ApiError(
        401,
        'Incorrect or missing API key: send Authorization: Bearer TOKEN (the token of this run)',
        'invalid_request_error',
        null,
        'invalid_api_key',
      );
    if (req.method === 'GET') return handleGet(ctx, path, res);
    if (req.method !== 'POST') throw new ApiError(405, `method ${req.method} not allowed`, 'invalid_request_error');
    if (active >= limits.maxConcurrent)
      throw new ApiError(
        429,
        `this server answers ${limits.maxConcurrent} requests at once; retry later`,
        'rate_limit_error',
        null,
        'too_many_requests',
      );
    active++;
    // Released when the sampling ends: a request past its timeout still holds its slot until then.
    let held = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      const raw = await readBody(req, limits.maxBodyBytes);
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch (e) {
        throw badRequest(`the request body is not valid JSON: ${(e as Error).message}`, null, 'invalid_json');
      }
      const expired = new AbortController();
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          expired.abort();
          reject(
            new ApiError(
              504,
              `the request took longer than this server's limit of ${limits.requestTimeoutMs / 1000} s`,
              'timeout_error',
              null,
              'request_timeout',
            ),
          );
        }, limits.requestTimeoutMs);
      });
      const work = handlePost(ctx, path, body, res, expired.signal);
      held = false;
      work.then(
        () => active--,
        () => active--,
      );
      await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
      if (held) active--;
    }
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      const err =
        e instanceof ApiError ? e : new ApiError(500, `internal error: ${(e as Error).message}`, 'server_error');
      // A body refused part-way: the connection ends after the answer rather than reading the rest.
      if (err.status === 413 && !res.headersSent) res.setHeader('connection', 'close');
      sendError(res, err);
      if (!res.writableEnded && res.headersSent) res.end();
    });
  });
  // A client reuses an idle connection until its own idle timeout (undici 4 s, httpx 5 s), so the
  // server keeps idle ones longer and never closes one a client is sending on. With Node's 5 s, a
  // busy event loop (a weight switch loading a checkpoint) let that timer fire first and the
  // client's request met a closed connection.
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.headersTimeout = KEEP_ALIVE_MS + 1000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => resolve());
  });
  const a = server.address() as AddressInfo;
  const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
  return {
    baseURL: `http://${host}:${a.port}/v1`,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
