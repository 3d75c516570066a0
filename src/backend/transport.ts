// How the extension reaches a backend: a child process (`node rft.mjs serve`, JSON-RPC on its
// stdio) or a TCP connection to a backend on another machine (`rftStudio.backendUrl`).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type Socket } from 'node:net';
import {
  createMessageConnection,
  SocketMessageReader,
  SocketMessageWriter,
  StreamMessageReader,
  StreamMessageWriter,
  type DataCallback,
  type Disposable,
  type MessageConnection,
} from 'vscode-jsonrpc/node';

export interface Exit {
  code: number | null;
  signal: string | null;
  /** Last lines the process wrote to stderr (crash reports). */
  stderrTail: string[];
}

export interface Transport {
  connection: MessageConnection;
  /** Resolves once when the backend goes away. */
  exited: Promise<Exit>;
  kill(): void;
  describe: string;
}

export type Connector = () => Promise<Transport>;

export interface ChildOptions {
  node: string;
  args: string[];
  cwd: string;
  /** Read at each spawn when a function: a restart takes the settings as they are now (rftStudio.engine). */
  env?: NodeJS.ProcessEnv | (() => NodeJS.ProcessEnv);
  onStderr?(line: string): void;
}

export function childConnector(o: ChildOptions): Connector {
  return async () => {
    const child = spawn(o.node, o.args, {
      cwd: o.cwd,
      env: { ...process.env, ...(typeof o.env === 'function' ? o.env() : o.env) },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const tail: string[] = [];
    let partial = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) {
        tail.push(l);
        if (tail.length > 40) tail.shift();
        o.onStderr?.(l);
      }
    });
    const exited = new Promise<Exit>((res) => {
      let done = false;
      const finish = (code: number | null, signal: string | null) => {
        if (done) return;
        done = true;
        if (partial) tail.push(partial);
        res({ code, signal, stderrTail: tail });
      };
      child.once('exit', (code, signal) => finish(code, signal));
      child.once('error', (err) => {
        tail.push(String(err.message));
        finish(null, null);
      });
    });
    await new Promise<void>((res, rej) => {
      child.once('spawn', () => res());
      child.once('error', rej);
    });
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
    );
    return { connection, exited, kill: () => child.kill(), describe: `pid ${child.pid}` };
  };
}

/**
 * `tcp://host:port` (a backend started with `rft serve --port N`). The server's token comes from
 * `?token=...`, or the file in `?tokenFile=...`, or `<workspace>/.rft/serve-<port>.token` (what a
 * local server writes); it is sent in `server/auth` before anything else.
 */
export function tcpConnector(url: string, opts: { workspace?: string } = {}): Connector {
  const u = new URL(url);
  if (u.protocol !== 'tcp:') throw new Error(`rftStudio.backendUrl must look like tcp://host:port, got '${url}'`);
  const shown = `tcp://${u.host}`; // never log the token
  return async () => {
    const token = serverToken(u, opts.workspace);
    const socket = connect(Number(u.port), u.hostname.replace(/^\[|\]$/g, ''));
    await new Promise<void>((res, rej) => {
      socket.once('connect', () => res());
      socket.once('error', rej);
    });
    try {
      await authenticate(socket, token);
    } catch (err) {
      socket.destroy();
      throw new Error(`backend at ${shown}: ${(err as Error).message}`);
    }
    const exited = new Promise<Exit>((res) =>
      socket.once('close', () => res({ code: null, signal: null, stderrTail: [] })),
    );
    const connection = createMessageConnection(new ResumingReader(socket), new SocketMessageWriter(socket));
    return { connection, exited, kill: () => socket.destroy(), describe: shown };
  };
}

function serverToken(u: URL, workspace: string | undefined): string {
  const inline = u.searchParams.get('token');
  if (inline) return inline;
  const file =
    u.searchParams.get('tokenFile') ?? (workspace ? join(workspace, '.rft', `serve-${u.port}.token`) : undefined);
  if (!file)
    throw new Error(
      `rftStudio.backendUrl needs the server's token: add ?token=... or ?tokenFile=... (rft serve prints its token file)`,
    );
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new Error(
      `cannot read the backend's token file ${file} (${(err as Error).message}); add ?token=... to rftStudio.backendUrl`,
    );
  }
}

/** The socket was paused after authentication (so no byte is lost): it flows again once the connection listens. */
class ResumingReader extends SocketMessageReader {
  constructor(private readonly sock: Socket) {
    super(sock);
  }
  override listen(callback: DataCallback): Disposable {
    const d = super.listen(callback);
    this.sock.resume();
    return d;
  }
}

/** Sends `server/auth` as one raw frame and reads its reply before the JSON-RPC connection takes the socket. */
function authenticate(socket: Socket, token: string): Promise<void> {
  const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'auth', method: 'server/auth', params: { token } }));
  socket.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`), body]));
  return new Promise<void>((res, rej) => {
    let buf = Buffer.alloc(0);
    const done = (err?: Error) => {
      socket.off('data', onData);
      socket.off('close', onClose);
      clearTimeout(timer);
      if (err) rej(err);
      else res();
    };
    const onClose = () => done(new Error('closed the connection during authentication'));
    const timer = setTimeout(() => done(new Error('no answer to server/auth within 10 s')), 10_000);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const h = buf.indexOf('\r\n\r\n');
      if (h < 0) return;
      const len = Number(/content-length:\s*(\d+)/i.exec(buf.subarray(0, h).toString('latin1'))?.[1] ?? NaN);
      if (!Number.isFinite(len)) return done(new Error('answered server/auth without a Content-Length'));
      if (buf.length < h + 4 + len) return;
      socket.pause();
      const rest = buf.subarray(h + 4 + len);
      if (rest.length) socket.unshift(rest);
      let reply: { error?: { message: string } };
      try {
        reply = JSON.parse(buf.subarray(h + 4, h + 4 + len).toString('utf8')) as typeof reply;
      } catch {
        return done(new Error('answered server/auth with something that is not JSON'));
      }
      done(reply.error ? new Error(reply.error.message) : undefined);
    };
    socket.on('data', onData);
    socket.once('close', onClose);
  });
}
