// How the extension reaches a backend: a child process (`node rft.mjs serve`, JSON-RPC on its
// stdio) or a TCP connection to a backend on another machine (`rftStudio.backendUrl`).
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { createMessageConnection, SocketMessageReader, SocketMessageWriter, StreamMessageReader, StreamMessageWriter, type MessageConnection } from 'vscode-jsonrpc/node';

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
  env?: NodeJS.ProcessEnv;
  onStderr?(line: string): void;
}

export function childConnector(o: ChildOptions): Connector {
  return async () => {
    const child = spawn(o.node, o.args, { cwd: o.cwd, env: { ...process.env, ...o.env }, stdio: ['pipe', 'pipe', 'pipe'] });
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
    const connection = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
    return { connection, exited, kill: () => child.kill(), describe: `pid ${child.pid}` };
  };
}

/** `tcp://host:port` (a backend started with `rft serve --port N`). */
export function tcpConnector(url: string): Connector {
  const u = new URL(url);
  if (u.protocol !== 'tcp:') throw new Error(`rftStudio.backendUrl must look like tcp://host:port, got '${url}'`);
  return async () => {
    const socket = connect(Number(u.port), u.hostname);
    await new Promise<void>((res, rej) => {
      socket.once('connect', () => res());
      socket.once('error', rej);
    });
    const exited = new Promise<Exit>((res) => socket.once('close', () => res({ code: null, signal: null, stderrTail: [] })));
    const connection = createMessageConnection(new SocketMessageReader(socket), new SocketMessageWriter(socket));
    return { connection, exited, kill: () => socket.destroy(), describe: url };
  };
}
