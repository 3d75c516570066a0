// Webview side of the typed messaging with the extension host: request() returns a promise of the
// method's result type, on() subscribes to a notification; state via getState/setState.
import type { HostMessage, RequestMap, WebviewMessage } from './ipc-types.js';

export interface VsCodeApi {
  postMessage(m: unknown): void;
  getState(): unknown;
  setState(s: unknown): void;
}

declare global {
  function acquireVsCodeApi(): VsCodeApi;
}

export class WebviewIpc<R extends RequestMap<R>, N extends object> {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private readonly handlers = new Map<string, Set<(p: unknown) => void>>();

  constructor(
    readonly api: VsCodeApi,
    target: Pick<Window, 'addEventListener'>,
  ) {
    target.addEventListener('message', (ev: Event) => this.receive((ev as MessageEvent).data as HostMessage));
  }

  request<M extends keyof R & string>(method: M, params: R[M]['params']): Promise<R[M]['result']> {
    const id = this.nextId++;
    const msg: WebviewMessage = { kind: 'request', id, method, params };
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.api.postMessage(msg);
    });
  }

  on<M extends keyof N & string>(method: M, cb: (p: N[M]) => void): () => void {
    let set = this.handlers.get(method);
    if (!set) this.handlers.set(method, (set = new Set()));
    const f = cb as (p: unknown) => void;
    set.add(f);
    return () => set!.delete(f);
  }

  /** Tell the host the webview is listening (it then sends the initial notifications). */
  ready(): void {
    const msg: WebviewMessage = { kind: 'ready' };
    this.api.postMessage(msg);
  }

  private receive(m: HostMessage): void {
    if (!m || typeof m !== 'object') return;
    if (m.kind === 'response') {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.error) p.reject(Object.assign(new Error(m.error.message), { code: m.error.code }));
      else p.resolve(m.result);
    } else if (m.kind === 'notification') {
      for (const h of this.handlers.get(m.method) ?? []) h(m.params);
    }
  }
}
