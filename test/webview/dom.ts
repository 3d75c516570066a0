// A happy-dom window plus a stand-in for the extension host: it answers the webview's typed
// requests from a handler table and records what the webview posted and saved.
import { Window } from 'happy-dom';
import type { HostMessage, WebviewMessage } from '../../webview/shared/ipc-types.js';
import { WebviewIpc, type VsCodeApi } from '../../webview/shared/ipc.js';

export interface Host<R> {
  window: Window;
  document: Document;
  root: HTMLElement;
  api: VsCodeApi & { state: unknown; posted: WebviewMessage[] };
  ipc: WebviewIpc<R & Record<keyof R, { params: unknown; result: unknown }>, never>;
  requests: { method: string; params: unknown }[];
  notify(method: string, params: unknown): void;
  close(): Promise<void>;
}

export function host<R>(handlers: Record<string, (p: never) => unknown>, savedState?: unknown): Host<R> {
  const window = new Window({ width: 1200, height: 800, url: 'https://webview.test/' });
  const document = window.document as unknown as Document;
  const root = document.createElement('div');
  root.id = 'app';
  document.body.append(root);
  const requests: { method: string; params: unknown }[] = [];
  const deliver = (m: HostMessage) => window.dispatchEvent(new window.MessageEvent('message', { data: m }) as never);
  const api = {
    state: savedState,
    posted: [] as WebviewMessage[],
    postMessage(m: WebviewMessage) {
      api.posted.push(m);
      if (m.kind !== 'request') return;
      requests.push({ method: m.method, params: m.params });
      const h = handlers[m.method];
      // Answer asynchronously, as the real host does.
      setTimeout(async () => {
        try {
          if (!h) throw new Error(`unknown request '${m.method}'`);
          deliver({ kind: 'response', id: m.id, result: await h(m.params as never) });
        } catch (err) {
          deliver({ kind: 'response', id: m.id, error: { message: (err as Error).message } });
        }
      }, 0);
    },
    getState: () => api.state,
    setState(s: unknown) {
      api.state = JSON.parse(JSON.stringify(s));
    },
  };
  const ipc = new WebviewIpc(api, window as unknown as Window & typeof globalThis as never);
  return {
    window,
    document,
    root,
    api,
    ipc: ipc as never,
    requests,
    notify: (method, params) => deliver({ kind: 'notification', method, params }),
    async close() {
      await window.happyDOM.close();
    },
  };
}

export const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));

export async function until<T>(fn: () => T, what: string, ms = 5000): Promise<NonNullable<T>> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await tick(5);
  }
}
