// The server's message reader: frames with a size limit (framing.ts) and a JSON-RPC error reply to
// every frame it cannot pass on (malformed JSON, invalid UTF-8, an invalid request, a batch, an
// oversized message), so that a client never waits for its own timeout. On TCP it also holds every
// message back until the client has sent `server/auth` with the server's token.
import { timingSafeEqual } from 'node:crypto';
import type { Readable } from 'node:stream';
import { AbstractMessageReader, type DataCallback, type Disposable, type Message } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../core/protocol.js';
import { FrameParser } from './framing.js';
import type { AuthFailureLimit } from './auth-limit.js';

/** JSON-RPC 2.0's own codes. */
export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;

type Id = string | number | null;
export interface ErrorReply {
  jsonrpc: '2.0';
  id: Id;
  error: { code: number; message: string };
}

export interface GuardOptions {
  maxBytes?: number;
  /** TCP: the token the first request (`server/auth`) must carry. */
  token?: string;
  onAuthenticated?(): void;
  /** TCP: failed authentications shared by every connection of the server (rate-limited). */
  authLimit?: AuthFailureLimit;
  /** The stream cannot go on (broken framing, failed authentication): the transport closes it. */
  onFatal(reason: string): void;
}

const errorReply = (id: Id, code: number, message: string): ErrorReply => ({
  jsonrpc: '2.0',
  id,
  error: { code, message },
});
const isId = (v: unknown): v is string | number =>
  typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v));
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** What to do with one parsed frame: pass the message on, or answer with error(s). */
export function checkMessage(v: unknown): { message: Message } | { reply: ErrorReply | ErrorReply[] | null } {
  if (Array.isArray(v)) {
    if (!v.length) return { reply: errorReply(null, INVALID_REQUEST, 'an empty batch is not a request') };
    // Batches are refused as a whole: one error per request in it (notifications get none).
    const msg = 'batch requests are not supported: send each request as its own message';
    const ids = v.flatMap((x) =>
      x && typeof x === 'object' && isId((x as { id?: unknown }).id) ? [(x as { id: string | number }).id] : [],
    );
    return {
      reply: ids.length
        ? ids.map((id) => errorReply(id, INVALID_REQUEST, msg))
        : errorReply(null, INVALID_REQUEST, msg),
    };
  }
  if (!v || typeof v !== 'object')
    return { reply: errorReply(null, INVALID_REQUEST, 'a message must be a JSON object') };
  const m = v as {
    jsonrpc?: unknown;
    id?: unknown;
    method?: unknown;
    params?: unknown;
    result?: unknown;
    error?: unknown;
  };
  const id: Id = isId(m.id) ? m.id : null;
  if (m.jsonrpc !== '2.0') return { reply: errorReply(id, INVALID_REQUEST, 'field \'jsonrpc\' must be "2.0"') };
  if (m.id !== undefined && m.id !== null && !isId(m.id))
    return { reply: errorReply(null, INVALID_REQUEST, "field 'id' must be a string or a number") };
  if (m.method === undefined) {
    if (m.id !== undefined && ('result' in m || 'error' in m)) return { message: v as Message }; // a response to the server
    return { reply: errorReply(id, INVALID_REQUEST, "field 'method' is missing") };
  }
  if (typeof m.method !== 'string' || !m.method)
    return { reply: errorReply(id, INVALID_REQUEST, "field 'method' must be a non-empty string") };
  if (m.params !== undefined && (m.params === null || typeof m.params !== 'object'))
    return { reply: errorReply(id, INVALID_REQUEST, "field 'params' must be an object or an array") };
  return { message: v as Message };
}

export class GuardedReader extends AbstractMessageReader {
  private readonly parser: FrameParser;
  private callback: DataCallback | undefined;
  private readonly queue: Message[] = [];
  private authed: boolean;
  private stopped = false;

  constructor(
    readable: Readable,
    private readonly reply: (
      m: ErrorReply | ErrorReply[] | { jsonrpc: '2.0'; id: Id; result: unknown },
    ) => Promise<void> | void,
    private readonly o: GuardOptions,
  ) {
    super();
    this.parser = new FrameParser(o.maxBytes);
    this.authed = o.token === undefined;
    // Reading starts at once (authentication happens before anyone listens); messages wait in the queue.
    readable.on('data', (d: Buffer | string) => this.onData(typeof d === 'string' ? Buffer.from(d) : d));
    readable.on('error', (e) => this.fireError(e));
    readable.on('close', () => this.fireClose());
    readable.on('end', () => this.fireClose());
  }

  get authenticated(): boolean {
    return this.authed;
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    for (const m of this.queue.splice(0)) callback(m);
    return { dispose: () => (this.callback = undefined) };
  }

  private onData(chunk: Buffer): void {
    for (const f of this.parser.push(chunk)) {
      if (this.stopped) return;
      if (f.kind === 'fatal') {
        this.stopped = true;
        // The reply goes out before the transport closes the stream.
        void Promise.resolve(this.reply(errorReply(null, PARSE_ERROR, f.reason))).finally(() =>
          this.o.onFatal(f.reason),
        );
        return;
      }
      if (f.kind === 'oversized') {
        this.reply(
          errorReply(
            null,
            INVALID_REQUEST,
            `message of ${f.length} bytes is over the limit of ${this.parser.maxBytes} bytes`,
          ),
        );
        continue;
      }
      let v: unknown;
      try {
        v = JSON.parse(utf8.decode(f.body));
      } catch (err) {
        this.reply(errorReply(null, PARSE_ERROR, `parse error: ${(err as Error).message}`));
        continue;
      }
      const c = checkMessage(v);
      if ('reply' in c) {
        if (c.reply) this.reply(c.reply);
        continue;
      }
      if (!this.authed) {
        this.authenticate(c.message);
        continue;
      }
      if (this.callback) this.callback(c.message);
      else this.queue.push(c.message);
    }
  }

  private authenticate(m: Message): void {
    const r = m as { id?: string | number; method?: string; params?: { token?: unknown } };
    const wait = this.o.authLimit?.waitSeconds();
    if (wait !== undefined) {
      this.stopped = true;
      void Promise.resolve(
        this.reply(
          errorReply(
            r.id ?? null,
            ErrorCodes.Unauthorized,
            `unauthorized: too many failed authentications: try again in ${Math.ceil(wait)} s`,
          ),
        ),
      ).finally(() => this.o.onFatal('authentication rate-limited'));
      return;
    }
    const given = typeof r.params?.token === 'string' ? Buffer.from(r.params.token) : Buffer.alloc(0);
    const want = Buffer.from(this.o.token!);
    const ok =
      r.method === 'server/auth' && r.id !== undefined && given.length === want.length && timingSafeEqual(given, want);
    if (!ok) {
      this.stopped = true;
      this.o.authLimit?.failed();
      const why =
        r.method === 'server/auth'
          ? 'wrong token'
          : `the first request must be server/auth with the token from the server's token file (got ${r.method ?? 'a response'})`;
      void Promise.resolve(
        this.reply(errorReply(r.id ?? null, ErrorCodes.Unauthorized, `unauthorized: ${why}`)),
      ).finally(() => this.o.onFatal('authentication failed'));
      return;
    }
    this.authed = true;
    this.reply({ jsonrpc: '2.0', id: r.id!, result: { ok: true } });
    this.o.onAuthenticated?.();
  }
}
