// Content-Length framing of JSON-RPC messages with limits: a message over the size limit is
// skipped as it streams (never buffered), a header block that never ends or has no valid
// Content-Length is fatal (the stream cannot be re-synchronised).
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
const MAX_HEADER_BYTES = 8192;
const SEP = Buffer.from('\r\n\r\n');

export type Frame =
  | { kind: 'message'; body: Buffer }
  | { kind: 'oversized'; length: number }
  | { kind: 'fatal'; reason: string };

export class FrameParser {
  private chunks: Buffer[] = [];
  private size = 0;
  /** Body length of the frame being read (after its headers). */
  private need: number | undefined;
  /** Bytes of an oversized body still to drop. */
  private skip = 0;
  private dead = false;

  constructor(readonly maxBytes = DEFAULT_MAX_MESSAGE_BYTES) {}

  push(chunk: Buffer): Frame[] {
    const out: Frame[] = [];
    if (this.dead) return out;
    if (this.skip > 0) {
      const n = Math.min(this.skip, chunk.length);
      this.skip -= n;
      chunk = chunk.subarray(n);
    }
    if (chunk.length) {
      this.chunks.push(chunk);
      this.size += chunk.length;
    }
    for (;;) {
      if (this.need === undefined) {
        const buf = this.joined();
        const end = buf.indexOf(SEP);
        if (end < 0) {
          if (buf.length > MAX_HEADER_BYTES) out.push(this.fatal(`no end of headers within ${MAX_HEADER_BYTES} bytes`));
          break;
        }
        const headers = buf.subarray(0, end).toString('latin1');
        const http = httpRequest(headers);
        if (http) {
          out.push(this.fatal(http));
          break;
        }
        const m = /^content-length:[ \t]*(\d+)[ \t]*$/im.exec(headers);
        if (!m) {
          out.push(this.fatal('a message needs a Content-Length header with a byte count'));
          break;
        }
        const len = Number(m[1]);
        const rest = buf.subarray(end + SEP.length);
        if (len > this.maxBytes) {
          out.push({ kind: 'oversized', length: len });
          const n = Math.min(len, rest.length);
          this.skip = len - n;
          this.set(rest.subarray(n));
          if (this.skip > 0) break;
          continue;
        }
        this.need = len;
        this.set(rest);
      }
      if (this.size < this.need) break;
      const buf = this.joined();
      out.push({ kind: 'message', body: buf.subarray(0, this.need) });
      this.set(buf.subarray(this.need));
      this.need = undefined;
    }
    return out;
  }

  private fatal(reason: string): Frame {
    this.dead = true;
    this.set(Buffer.alloc(0));
    return { kind: 'fatal', reason };
  }

  private joined(): Buffer {
    if (this.chunks.length !== 1) this.chunks = [Buffer.concat(this.chunks, this.size)];
    return this.chunks[0] ?? Buffer.alloc(0);
  }

  private set(b: Buffer): void {
    this.chunks = b.length ? [b] : [];
    this.size = b.length;
  }
}

/**
 * Why a header block is an HTTP request, not a JSON-RPC frame: a request line or a Host / Origin
 * header. A web page (and a DNS-rebinding attack through it) can POST to a loopback port with a
 * Content-Length the framing would otherwise take; browsers always send Host, so it is refused.
 */
export function httpRequest(headers: string): string | undefined {
  const lines = headers.split('\r\n');
  if (/^[A-Z]+ \S+ HTTP\/\d/.test(lines[0] ?? ''))
    return `an HTTP request ('${lines[0]!.slice(0, 60)}') is not served: rft serve speaks JSON-RPC with Content-Length framing only`;
  const named = lines.find((l) => /^(host|origin|referer|sec-fetch-[a-z]+):/i.test(l));
  if (named)
    return `an HTTP header ('${named.split(':')[0]}') is not served: rft serve speaks JSON-RPC with Content-Length framing only`;
  return undefined;
}

export function frame(msg: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(msg), 'utf8');
  return Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'latin1'), body]);
}
