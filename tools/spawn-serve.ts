// Spawns `rft serve` (backend/serve.ts, the serve command's own entry, through tsx) as a child process and connects a JSON-RPC
// client to its stdio, as the extension does.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import type { ParamsOf, RequestMethod, ResultOf } from '../backend/core/protocol.js';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const SERVE_ENTRY = fileURLToPath(new URL('../backend/serve.ts', import.meta.url));

export interface Served {
  child: ChildProcess;
  conn: MessageConnection;
  stderr: string[];
  request<M extends RequestMethod>(m: M, p: ParamsOf<M>): Promise<ResultOf<M>>;
  close(): Promise<void>;
}

export function serveArgs(args: string[]): string[] {
  return ['--import', 'tsx', SERVE_ENTRY, ...args];
}

export function spawnServe(args: string[], env: Record<string, string> = {}): Served {
  const child = spawn(process.execPath, serveArgs(args), {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const stderr: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (d: string) => stderr.push(d));
  const conn = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
  conn.listen();
  return {
    child,
    conn,
    stderr,
    request: (m, p) => conn.sendRequest(m, p) as never,
    async close() {
      const exited = new Promise((r) => child.once('exit', r));
      if (child.exitCode === null) {
        await Promise.race([conn.sendRequest('server/shutdown', {}), new Promise((r) => setTimeout(r, 2000))]).catch(
          () => undefined,
        );
        const t = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(t);
      }
      conn.dispose();
    },
  };
}
