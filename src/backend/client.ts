// The typed JSON-RPC client of the backend: starts it through a Connector, restarts it when it
// dies (RestartPolicy), and keeps notification listeners across restarts. No 'vscode' import.
import type { Disposable as RpcDisposable, MessageConnection } from 'vscode-jsonrpc/node';
import type {
  ErrorCode,
  NotificationMethod,
  Notifications,
  ParamsOf,
  RequestMethod,
  ResultOf,
  ServerCapabilities,
} from '../../backend/core/protocol.js';
import type { Connector, Exit, Transport } from './transport.js';
import { RestartPolicy } from './restart-policy.js';

export type BackendState = 'stopped' | 'starting' | 'running' | 'restarting' | 'failed';

export interface ClientLog {
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export interface ClientOptions {
  clientVersion: string;
  workspace?: string;
  policy?: RestartPolicy;
  log: ClientLog;
  /** Called when the backend died too often and the client gave up. */
  onGiveUp?(exit: Exit): void;
  setTimer?(fn: () => void, ms: number): unknown;
}

export interface Disposable {
  dispose(): void;
}

// Same numbers as ErrorCodes in backend/core/protocol.ts (which the extension imports as types only).
export const NOT_AVAILABLE: ErrorCode = -32001;

export function errorCode(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'number'
    ? (err as { code: number }).code
    : undefined;
}

export class BackendClient {
  state: BackendState = 'stopped';
  capabilities: ServerCapabilities | undefined;
  serverVersion: string | undefined;
  private transport: Transport | undefined;
  private ready: Promise<void> | undefined;
  private disposed = false;
  private readonly listeners = new Map<string, Set<(p: unknown) => void>>();
  private readonly stateListeners = new Set<(s: BackendState) => void>();
  private readonly startListeners = new Set<() => void>();
  private readonly policy: RestartPolicy;
  starts = 0;

  constructor(
    private readonly connector: Connector,
    private readonly o: ClientOptions,
  ) {
    this.policy = o.policy ?? new RestartPolicy();
  }

  start(): Promise<void> {
    this.ready ??= this.launch();
    return this.ready;
  }

  private setState(s: BackendState): void {
    this.state = s;
    for (const l of this.stateListeners) l(s);
  }

  private async launch(): Promise<void> {
    this.setState('starting');
    let t: Transport;
    try {
      t = await this.connector();
    } catch (err) {
      this.o.log.error(`backend failed to start: ${err instanceof Error ? err.message : String(err)}`);
      this.onExit({ code: null, signal: null, stderrTail: [String(err)] });
      throw err;
    }
    this.transport = t;
    this.starts++;
    t.connection.onNotification((method: string, params: unknown) => {
      for (const l of this.listeners.get(method) ?? []) l(params);
    });
    t.connection.listen();
    void t.exited.then((exit) => {
      if (this.transport === t) this.onExit(exit);
    });
    const hello = (await t.connection.sendRequest('server/hello', {
      clientVersion: this.o.clientVersion,
      workspace: this.o.workspace,
    })) as ResultOf<'server/hello'>;
    this.capabilities = hello.capabilities;
    this.serverVersion = hello.serverVersion;
    this.o.log.info(`backend ${hello.serverVersion} running (${t.describe})`);
    this.setState('running');
    for (const l of this.startListeners) l();
  }

  private onExit(exit: Exit): void {
    this.transport?.connection.dispose();
    this.transport = undefined;
    this.ready = undefined;
    if (this.disposed) return;
    const why = exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
    this.o.log.warn(
      `backend exited (${why})${exit.stderrTail.length ? ':\n' + exit.stderrTail.slice(-10).join('\n') : ''}`,
    );
    const delay = this.policy.onDeath(Date.now());
    if (delay === null) {
      this.setState('failed');
      this.o.onGiveUp?.(exit);
      return;
    }
    this.setState('restarting');
    (this.o.setTimer ?? setTimeout)(() => {
      if (!this.disposed && !this.ready) this.start().catch(() => undefined);
    }, delay);
  }

  /** Start again after the client gave up (user pressed Restart). */
  restart(): Promise<void> {
    this.policy.reset();
    const t = this.transport;
    this.transport = undefined;
    this.ready = undefined;
    if (t) {
      t.connection.dispose();
      t.kill();
    }
    return this.start();
  }

  async request<M extends RequestMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
    await this.start();
    const t = this.transport;
    if (!t) throw new Error('the RFT Studio backend is not running');
    return (await t.connection.sendRequest(method, params)) as ResultOf<M>;
  }

  onNotification<N extends NotificationMethod>(method: N, cb: (p: Notifications[N]) => void): Disposable {
    let set = this.listeners.get(method);
    if (!set) this.listeners.set(method, (set = new Set()));
    const f = cb as (p: unknown) => void;
    set.add(f);
    return { dispose: () => set!.delete(f) };
  }

  onState(cb: (s: BackendState) => void): Disposable {
    this.stateListeners.add(cb);
    return { dispose: () => this.stateListeners.delete(cb) };
  }

  /** After every (re)start: re-open the buffer, re-watch tasksets... */
  onStarted(cb: () => void): Disposable {
    this.startListeners.add(cb);
    return { dispose: () => this.startListeners.delete(cb) };
  }

  /** For tests and diagnostics. */
  get connection(): MessageConnection | undefined {
    return this.transport?.connection;
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    const t = this.transport;
    this.transport = undefined;
    if (!t) return;
    try {
      await Promise.race([t.connection.sendRequest('server/shutdown', {}), new Promise((r) => setTimeout(r, 1000))]);
    } catch {
      /* already gone */
    }
    t.connection.dispose();
    t.kill();
    this.setState('stopped');
  }
}

export type { RpcDisposable };
