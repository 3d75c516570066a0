// The status bar item (backend state, or the active run's progress), updated when the state or the
// backend changes. Its registration also pushes the state, the taskset Problems and the sidebar's trees, in
// the order activate() always disposed them.
import type * as vscode from 'vscode';
import type { BackendClient } from '../backend/client.js';
import type { TasksetDiagnostics } from '../diagnostics.js';
import type { StudioState } from '../state.js';
import { StatusBar } from '../status-bar.js';
import { toVs } from './disposable.js';

export interface StatusDeps {
  client: BackendClient;
  state: StudioState;
  diagnostics: TasksetDiagnostics;
  /** The sidebar's trees (registerSidebar). */
  views: vscode.Disposable[];
}

export function registerStatusBar(context: vscode.ExtensionContext, d: StatusDeps): void {
  const { client: c, state } = d;
  const status = new StatusBar(() => c.state, state);
  context.subscriptions.push(state, d.diagnostics, status, ...d.views);
  context.subscriptions.push(
    state.onDidChange(() => status.update()),
    toVs(c.onState(() => status.update())),
  );
}
