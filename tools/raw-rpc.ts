// A raw JSON-RPC peer for hostile-input tests: writes any bytes (bad frames, batches, huge messages)
// and reads the server's framed replies, over TCP or a child's stdio.
import { connect, type Socket } from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { FrameParser, frame } from '../backend/server/framing.js';

export interface RawPeer {
  write(bytes: Buffer | string): void;
  send(msg: unknown): void;
  /** The next reply (parsed JSON); rejects when the stream closes first or after `ms`. */
  next(ms?: number): Promise<unknown>;
  closed: Promise<void>;
  destroy(): void;
}

export function rawPeer(input: Readable, output: Writable, destroy: () => void): RawPeer {
  const parser = new FrameParser(1 << 30);
  const got: unknown[] = [];
  let wake: (() => void) | undefined;
  let isClosed = false;
  const closed = new Promise<void>((r) => {
    const done = () => {
      isClosed = true;
      wake?.();
      r();
    };
    input.once('close', done);
    input.once('end', done);
  });
  input.on('data', (d: Buffer) => {
    for (const f of parser.push(d)) if (f.kind === 'message') got.push(JSON.parse(f.body.toString('utf8')));
    wake?.();
  });
  input.on('error', () => undefined);
  return {
    write: (b) => void output.write(b),
    send: (m) => void output.write(frame(m)),
    async next(ms = 10_000) {
      const end = Date.now() + ms;
      while (!got.length) {
        if (isClosed) throw new Error('closed before a reply');
        if (Date.now() > end) throw new Error('no reply in time');
        await new Promise<void>((r) => {
          wake = r;
          setTimeout(r, 50);
        });
      }
      return got.shift();
    },
    closed,
    destroy,
  };
}

export async function tcpPeer(port: number): Promise<RawPeer & { socket: Socket }> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((res, rej) => {
    socket.once('connect', res);
    socket.once('error', rej);
  });
  return { ...rawPeer(socket, socket, () => socket.destroy()), socket };
}
