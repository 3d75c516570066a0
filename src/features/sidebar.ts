// The sidebar's views: Runs, Buffer and Tasksets (its badge counts the taskset errors), then Workers
// (a distributed run's explorers and trainer, polled while one is configured). The three trees are
// returned, not pushed: the status bar's registration pushes them, in the order activate() always had.
import * as vscode from 'vscode';
import type { BackendClient } from '../backend/client.js';
import type { StudioState } from '../state.js';
import { BufferTree } from '../views/buffer-tree.js';
import { RunsTree } from '../views/runs-tree.js';
import { registerWorkersView } from '../views/workers-view.js';
import type { TasksetChecks } from './taskset-checks.js';

export interface SidebarDeps {
  client: BackendClient;
  state: StudioState;
  checks: Pick<TasksetChecks, 'tasksets' | 'badgeOn'>;
}

export function registerSidebar(context: vscode.ExtensionContext, d: SidebarDeps): vscode.Disposable[] {
  const runsView = vscode.window.createTreeView('rftStudio.runs', { treeDataProvider: new RunsTree(d.state) });
  const bufferView = vscode.window.createTreeView('rftStudio.buffer', { treeDataProvider: new BufferTree(d.state) });
  const tasksetsView = vscode.window.createTreeView('rftStudio.tasksets', { treeDataProvider: d.checks.tasksets });
  d.checks.badgeOn(tasksetsView);
  registerWorkersView(context, d.client);
  return [runsView, bufferView, tasksetsView];
}
