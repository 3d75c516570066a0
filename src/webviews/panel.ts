// A webview panel with typed request/notification routing (see webview/shared/ipc-types.ts).
// No retainContextWhenHidden: the webview keeps its own state with getState/setState.
import * as vscode from 'vscode';
import type { HostMessage, RequestMap as ReqMap, WebviewMessage } from '../../webview/shared/ipc-types.js';
import { nonce, shellHtml } from './html.js';

export type Handlers<R extends ReqMap<R>> = { [M in keyof R]: (params: R[M]['params']) => Promise<R[M]['result']> };

export class TypedPanel<R extends ReqMap<R>, N extends object> implements vscode.Disposable {
  readonly panel: vscode.WebviewPanel;
  private readonly subs: vscode.Disposable[] = [];
  private readyResolve!: () => void;
  /** Resolves when the webview script has loaded and said 'ready' (first paint). */
  readonly ready = new Promise<void>((r) => (this.readyResolve = r));
  private disposed = false;
  onDispose?: () => void;
  /**
   * Each time the webview's script says 'ready': the first load, and every reload after the panel
   * was hidden and shown again (no retainContextWhenHidden: the webview starts over and must be told
   * its state again, else it shows "no buffer open" until the next change).
   */
  onReady?: () => void;

  constructor(
    extensionUri: vscode.Uri,
    viewType: string,
    title: string,
    script: string,
    private readonly handlers: Handlers<R>,
    column: vscode.ViewColumn = vscode.ViewColumn.Active,
    /** A panel VS Code restored after a window reload (WebviewPanelSerializer): adopted, not created. */
    restored?: vscode.WebviewPanel,
  ) {
    const dist = vscode.Uri.joinPath(extensionUri, 'dist', 'webview');
    const options = { enableScripts: true, localResourceRoots: [dist, vscode.Uri.joinPath(extensionUri, 'media')] };
    if (restored) {
      this.panel = restored;
      this.panel.webview.options = options;
    } else this.panel = vscode.window.createWebviewPanel(viewType, title, column, options);
    const w = this.panel.webview;
    const n = nonce();
    w.html = shellHtml({
      cspSource: w.cspSource,
      nonce: n,
      title,
      scriptUri: w.asWebviewUri(vscode.Uri.joinPath(dist, `${script}.js`)).toString(),
      codiconCssUri: w.asWebviewUri(vscode.Uri.joinPath(dist, 'codicons', 'codicon.css')).toString(),
      styleUri: w.asWebviewUri(vscode.Uri.joinPath(dist, `${script}.css`)).toString(),
    });
    this.subs.push(w.onDidReceiveMessage((m: WebviewMessage) => void this.receive(m)));
    this.panel.onDidDispose(() => this.dispose());
  }

  private async receive(m: WebviewMessage): Promise<void> {
    if (m.kind === 'ready') {
      this.readyResolve();
      this.onReady?.();
      return;
    }
    if (m.kind !== 'request') return;
    const h = this.handlers[m.method as keyof R];
    let reply: HostMessage;
    if (!h) reply = { kind: 'response', id: m.id, error: { message: `unknown request '${m.method}'` } };
    else {
      try {
        reply = { kind: 'response', id: m.id, result: await h(m.params as never) };
      } catch (err) {
        const code = typeof (err as { code?: unknown })?.code === 'number' ? (err as { code: number }).code : undefined;
        reply = {
          kind: 'response',
          id: m.id,
          error: { message: err instanceof Error ? err.message : String(err), code },
        };
      }
    }
    if (!this.disposed) void this.panel.webview.postMessage(reply);
  }

  notify<M extends keyof N & string>(method: M, params: N[M]): void {
    if (this.disposed) return;
    const msg: HostMessage = { kind: 'notification', method, params };
    void this.panel.webview.postMessage(msg);
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const s of this.subs) s.dispose();
    this.panel.dispose();
    this.onDispose?.();
  }
}
