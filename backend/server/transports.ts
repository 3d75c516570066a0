// Transports for the server: stdio (the extension's child process; stdout is the channel, so
// every log line goes to stderr) and TCP on a host/port (a backend on another machine). Both read
// through GuardedReader (size limit, error replies to bad frames); TCP also needs the server's token.
import { createServer, type AddressInfo } from 'node:net';
import {
  createMessageConnection,
  SocketMessageWriter,
  StreamMessageWriter,
  type MessageWriter,
} from 'vscode-jsonrpc/node';
import { logger } from '../core/log.js';
import type { ServerDeps } from './ports.js';
import { startServer } from './server.js';
import { GuardedReader, type ErrorReply } from './guarded-reader.js';
import { AuthFailureLimit } from './auth-limit.js';

const log = logger('serve');
/** An unauthenticated TCP connection is closed after this long. */
export const AUTH_TIMEOUT_MS = 10_000;

const replier = (w: MessageWriter) => (m: ErrorReply | ErrorReply[] | object) =>
  // A batch answer is an array; the writer frames whatever it is given.
  w
    .write(m as never)
    .catch(() => undefined);

export async function serveStdio(deps: ServerDeps, opts: { maxBytes?: number } = {}): Promise<void> {
  const writer = new StreamMessageWriter(process.stdout);
  let fatal: () => void = () => undefined;
  const reader = new GuardedReader(process.stdin, replier(writer), {
    maxBytes: opts.maxBytes,
    onFatal: (why) => (log.error(`closing stdio: ${why}`), fatal()),
  });
  const conn = createMessageConnection(reader, writer);
  const server = startServer(conn, deps, { forwardLogs: true });
  const broken = new Promise<void>((r) => (fatal = r));
  log.info('backend serving JSON-RPC on stdio', { pid: process.pid, capabilities: server.capabilities });
  await Promise.race([server.closed, broken]);
  await server.dispose();
  conn.dispose();
  // Let the process end: stdin would keep the event loop alive.
  process.stdin.destroy();
}

export interface TcpOptions {
  host: string;
  port: number;
  token: string;
  maxBytes?: number;
  onListening?(port: number): void;
}

/** Serves each TCP client with its own connection once it has authenticated; resolves when the listener closes. */
export async function serveTcp(deps: ServerDeps, o: TcpOptions): Promise<void> {
  const authLimit = new AuthFailureLimit();
  const srv = createServer((socket) => {
    const remote = `${socket.remoteAddress}:${socket.remotePort}`;
    const writer = new SocketMessageWriter(socket);
    const timer = setTimeout(() => {
      log.warn('closing a connection that did not authenticate in time', { remote });
      socket.destroy();
    }, AUTH_TIMEOUT_MS);
    socket.once('close', () => clearTimeout(timer));
    const reader: GuardedReader = new GuardedReader(socket, replier(writer), {
      maxBytes: o.maxBytes,
      token: o.token,
      authLimit,
      onFatal: (why) => {
        log.warn(`closing connection: ${why}`, { remote });
        // Let the error reply go out first.
        socket.end();
        setTimeout(() => socket.destroy(), 1000).unref();
      },
      onAuthenticated: () => {
        clearTimeout(timer);
        const conn = createMessageConnection(reader, writer);
        const server = startServer(conn, deps);
        log.info('client connected', { remote });
        void server.closed.then(async () => {
          await server.dispose();
          socket.end();
        });
      },
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((res, rej) => {
    srv.once('error', rej);
    srv.listen(o.port, o.host, () => res());
  });
  const actual = (srv.address() as AddressInfo).port;
  log.info(`backend serving JSON-RPC on tcp://${o.host}:${actual}`);
  o.onListening?.(actual);
  await new Promise<void>((res) => srv.once('close', () => res()));
}
