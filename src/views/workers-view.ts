// The Workers view: the explorers and trainer of a distributed run (scale-out over PostgreSQL), polled
// every 5 s while the backend runs, and at once when the rftStudio.scaleOut settings change.
import * as vscode from 'vscode';
import type { BackendClient } from '../backend/client.js';
import { WorkersTree } from './workers-tree.js';

const POLL_MS = 5000;

export function registerWorkersView(context: vscode.ExtensionContext, c: BackendClient): void {
  const workers = new WorkersTree((src) => c.request('workers/list', src));
  const view = vscode.window.createTreeView('rftStudio.workers', { treeDataProvider: workers });
  const refresh = async () => {
    if (c.state !== 'running') return;
    await workers.refresh();
    view.description = workers.summary;
  };
  const timer = setInterval(() => void refresh().catch(() => undefined), POLL_MS);
  context.subscriptions.push(
    view,
    { dispose: () => clearInterval(timer) },
    vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('rftStudio.scaleOut') && void refresh()),
  );
}
