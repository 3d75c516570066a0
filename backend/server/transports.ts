// Transports for the server: stdio (the extension's child process; stdout is the channel, so
// every log line goes to stderr) and TCP on a host/port (a backend on another machine).
import { createServer, type AddressInfo } from 'node:net';
import { createMessageConnection, SocketMessageReader, SocketMessageWriter, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';
import { logger } from '../core/log.js';
import type { ServerDeps } from './ports.js';
import { startServer } from './server.js';

const log = logger('serve');

export async function serveStdio(deps: ServerDeps): Promise<void> {
  const conn = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
  const server = startServer(conn, deps, { forwardLogs: true });
  log.info('backend serving JSON-RPC on stdio', { pid: process.pid, capabilities: server.capabilities });
  await server.closed;
  await server.dispose();
  conn.dispose();
  // Let the process end: stdin would keep the event loop alive.
  process.stdin.destroy();
}

/** Serves each TCP client with its own connection; resolves when the listener closes. */
export async function serveTcp(deps: ServerDeps, host: string, port: number, onListening?: (port: number) => void): Promise<void> {
  const srv = createServer((socket) => {
    const conn = createMessageConnection(new SocketMessageReader(socket), new SocketMessageWriter(socket));
    const server = startServer(conn, deps);
    log.info('client connected', { remote: `${socket.remoteAddress}:${socket.remotePort}` });
    void server.closed.then(async () => {
      await server.dispose();
      socket.end();
    });
  });
  await new Promise<void>((res, rej) => {
    srv.once('error', rej);
    srv.listen(port, host, () => res());
  });
  const actual = (srv.address() as AddressInfo).port;
  log.info(`backend serving JSON-RPC on tcp://${host}:${actual}`);
  onListening?.(actual);
  await new Promise<void>((res) => srv.once('close', () => res()));
}
