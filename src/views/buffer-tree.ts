// Sidebar "Buffer": usual / expert / taskset counts of the open buffer, updated live from
// `buffer/changed` notifications.
import * as vscode from 'vscode';
import type { StudioState } from '../state.js';

export interface BufferNode {
  kind: 'usual' | 'expert' | 'taskset' | 'rejected' | 'infraFailure' | 'none';
  label: string;
  count?: number;
}

const ICONS: Record<BufferNode['kind'], string> = {
  usual: 'database',
  expert: 'star-full',
  taskset: 'checklist',
  rejected: 'circle-slash',
  infraFailure: 'warning',
  none: 'info',
};

export class BufferTree implements vscode.TreeDataProvider<BufferNode> {
  private readonly emitter = new vscode.EventEmitter<BufferNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;

  constructor(private readonly state: StudioState) {
    state.onDidChange((what) => what === 'buffer' && this.emitter.fire(undefined));
  }

  getChildren(): BufferNode[] {
    const c = this.state.counts;
    if (!c) return [{ kind: 'none', label: 'No buffer open' }];
    const nodes: BufferNode[] = [
      { kind: 'usual', label: 'Usual experiences', count: c.usual },
      { kind: 'expert', label: 'Expert experiences', count: c.expert },
      { kind: 'taskset', label: 'Taskset', count: c.taskset },
    ];
    if (c.rejected) nodes.push({ kind: 'rejected', label: 'Rejected', count: c.rejected });
    if (c.infraFailure) nodes.push({ kind: 'infraFailure', label: 'Infra failures', count: c.infraFailure });
    return nodes;
  }

  getTreeItem(n: BufferNode): vscode.TreeItem {
    const item = new vscode.TreeItem(n.label, vscode.TreeItemCollapsibleState.None);
    item.id = `buffer.${n.kind}`;
    item.iconPath = new vscode.ThemeIcon(ICONS[n.kind]);
    // Grouped digits, as the experience browser writes them (3,360, not 3360).
    if (n.count !== undefined) item.description = n.count.toLocaleString('en-US');
    item.contextValue = `rftBuffer.${n.kind}`;
    if (n.kind === 'none') item.command = { command: 'rftStudio.openBuffer', title: 'Open Buffer…' };
    else if (n.kind === 'usual' || n.kind === 'expert') {
      item.command = { command: 'rftStudio.openExperienceBrowser', title: 'Open Experience Browser', arguments: [{ source: n.kind }] };
    }
    return item;
  }
}
