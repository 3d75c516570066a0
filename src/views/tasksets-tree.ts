// Sidebar "Tasksets": taskset files in the workspace, each with its task count and an error
// badge from the backend's validation (the same reports that feed the Problems panel).
import * as vscode from 'vscode';
import type { TasksetReport } from '../../backend/core/protocol.js';

export const TASKSET_GLOB = '**/{tasksets,taskset,data}/**/*.{jsonl,json,yaml,yml,csv}';

export class TasksetsTree implements vscode.TreeDataProvider<vscode.Uri> {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private files: vscode.Uri[] = [];
  readonly reports = new Map<string, TasksetReport>();

  async refresh(): Promise<vscode.Uri[]> {
    this.files = await vscode.workspace.findFiles(TASKSET_GLOB, '**/node_modules/**', 500);
    this.files.sort((a, b) => a.fsPath.localeCompare(b.fsPath));
    this.emitter.fire(undefined);
    return this.files;
  }

  setReport(r: TasksetReport): void {
    this.reports.set(r.file, r);
    this.emitter.fire(undefined);
  }

  /** Total errors over all tasksets (the view's badge). */
  errorCount(): number {
    let n = 0;
    for (const r of this.reports.values()) n += r.issues.filter((i) => i.severity === 'error').length;
    return n;
  }

  getChildren(): vscode.Uri[] {
    return this.files;
  }

  getTreeItem(uri: vscode.Uri): vscode.TreeItem {
    const item = new vscode.TreeItem(uri, vscode.TreeItemCollapsibleState.None);
    const r = this.reports.get(uri.fsPath);
    const errors = r ? r.issues.filter((i) => i.severity === 'error').length : 0;
    item.description = r ? `${r.tasks.toLocaleString('en-US')} task${r.tasks === 1 ? '' : 's'}${errors ? ` · ${errors} error${errors === 1 ? '' : 's'}` : ''}` : '';
    item.iconPath = new vscode.ThemeIcon(errors ? 'error' : r ? 'pass' : 'file', errors ? new vscode.ThemeColor('list.errorForeground') : undefined);
    item.contextValue = 'rftTaskset';
    item.command = { command: 'vscode.open', title: 'Open', arguments: [uri] };
    return item;
  }
}
