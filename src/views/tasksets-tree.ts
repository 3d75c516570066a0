// Sidebar "Tasksets": taskset files in the workspace, each with its task count and an error
// badge from the backend's validation (the same reports that feed the Problems panel). A taskset is
// a file in a tasksets/ (taskset/, data/) folder, a file a run config names, or a JSONL / JSON file
// anywhere whose first records hold tasks (src/taskset-detect.ts).
import * as vscode from 'vscode';
import type { TasksetReport } from '../../backend/core/protocol.js';
import { CONTENT_EXCLUDE, CONTENT_GLOB } from '../taskset-detect.js';

export const TASKSET_GLOB = '**/{tasksets,taskset,data}/**/*.{jsonl,json,yaml,yml,csv,parquet,arrow}';

export class TasksetsTree implements vscode.TreeDataProvider<vscode.Uri> {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private files: vscode.Uri[] = [];
  readonly reports = new Map<string, TasksetReport>();

  /**
   * @param named files the workspace's run configs name (taskset, eval, experts)
   * @param holdsTasks whether a file found elsewhere holds tasks (its first records)
   */
  constructor(
    private readonly named: () => string[] = () => [],
    private readonly holdsTasks: (file: string) => boolean = () => false,
  ) {}

  async refresh(): Promise<vscode.Uri[]> {
    const byFolder = await vscode.workspace.findFiles(TASKSET_GLOB, '**/node_modules/**', 500);
    const seen = new Set(byFolder.map((u) => u.fsPath));
    const more = (await vscode.workspace.findFiles(CONTENT_GLOB, CONTENT_EXCLUDE, 500)).filter(
      (u) => !seen.has(u.fsPath) && (this.named().includes(u.fsPath) || this.holdsTasks(u.fsPath)),
    );
    this.files = [...byFolder, ...more];
    this.files.sort((a, b) => a.fsPath.localeCompare(b.fsPath));
    // A file gone (moved, deleted) takes its report along.
    const now = new Set(this.files.map((u) => u.fsPath));
    for (const f of [...this.reports.keys()]) if (!now.has(f)) this.reports.delete(f);
    this.emitter.fire(undefined);
    return this.files;
  }

  /** The taskset files found by the last refresh. */
  list(): vscode.Uri[] {
    return [...this.files];
  }

  setReport(r: TasksetReport): void {
    this.reports.set(r.file, r);
    this.emitter.fire(undefined);
  }

  forget(file: string): void {
    if (this.reports.delete(file)) this.emitter.fire(undefined);
  }

  getChildren(): vscode.Uri[] {
    return this.files;
  }

  getTreeItem(uri: vscode.Uri): vscode.TreeItem {
    const item = new vscode.TreeItem(uri, vscode.TreeItemCollapsibleState.None);
    const r = this.reports.get(uri.fsPath);
    const errors = r ? r.issues.filter((i) => i.severity === 'error').length : 0;
    item.description = r
      ? `${r.tasks.toLocaleString('en-US')} task${r.tasks === 1 ? '' : 's'}${errors ? ` · ${errors} error${errors === 1 ? '' : 's'}` : ''}`
      : '';
    item.iconPath = new vscode.ThemeIcon(
      errors ? 'error' : r ? 'pass' : 'file',
      errors ? new vscode.ThemeColor('list.errorForeground') : undefined,
    );
    item.contextValue = 'rftTaskset';
    item.command = { command: 'vscode.open', title: 'Open', arguments: [uri] };
    return item;
  }
}
