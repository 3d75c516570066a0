// Sidebar "Buffer": usual / expert / taskset counts of the open buffer, updated live from
// `buffer/changed` notifications. The Taskset node opens on the tasks the current run synthesized
// (`taskset.pipeline` synthesize), grouped by origin, each with its parent task and explore step.
import * as vscode from 'vscode';
import type { ExperienceSummary, SynthesizedTask } from '../../backend/core/protocol.js';
import type { StudioState } from '../state.js';

export interface BufferNode {
  kind:
    | 'usual'
    | 'expert'
    | 'taskset'
    | 'rejected'
    | 'infraFailure'
    | 'none'
    | 'synthOrigin'
    | 'synthTask'
    | 'expertItem';
  label: string;
  count?: number;
  /** expertItem: the expert (promoted or added) with its use count. */
  expert?: ExperienceSummary;
  /** synthOrigin: its tasks; synthTask: the task. */
  tasks?: SynthesizedTask[];
  task?: SynthesizedTask;
  runId?: string;
}

const ICONS: Record<BufferNode['kind'], string> = {
  usual: 'database',
  expert: 'star-full',
  taskset: 'checklist',
  rejected: 'circle-slash',
  infraFailure: 'warning',
  none: 'info',
  synthOrigin: 'sparkle',
  synthTask: 'symbol-event',
  expertItem: 'star-empty',
};

/** Experts listed under the Expert node, newest first (the browser shows them all). */
const EXPERTS_SHOWN = 50;

export class BufferTree implements vscode.TreeDataProvider<BufferNode> {
  private readonly emitter = new vscode.EventEmitter<BufferNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;

  constructor(private readonly state: StudioState) {
    // Runs too: the Taskset node shows the synthesized tasks of the active (else newest) run.
    state.onDidChange((what) => (what === 'buffer' || what === 'runs') && this.emitter.fire(undefined));
  }

  /** The run whose synthesized tasks the Taskset node shows: the active one, else the newest. */
  private synthRun(): string | undefined {
    return (this.state.activeRun ?? this.state.runs?.at(-1))?.id;
  }

  getChildren(): BufferNode[];
  getChildren(n?: BufferNode): BufferNode[] | Promise<BufferNode[]>;
  getChildren(n?: BufferNode): BufferNode[] | Promise<BufferNode[]> {
    if (n?.kind === 'taskset') return this.synthesized(n.runId!);
    if (n?.kind === 'expert') return this.experts();
    if (n?.kind === 'synthOrigin')
      return (n.tasks ?? []).map((task) => ({
        kind: 'synthTask',
        label: task.prompt.replace(/\s+/g, ' ').slice(0, 80),
        task,
      }));
    if (n) return [];
    const c = this.state.counts;
    if (!c) return [{ kind: 'none', label: 'No buffer open' }];
    const nodes: BufferNode[] = [
      { kind: 'usual', label: 'Usual experiences', count: c.usual },
      { kind: 'expert', label: 'Expert experiences', count: c.expert },
      { kind: 'taskset', label: 'Taskset', count: c.taskset, runId: this.synthRun() },
    ];
    if (c.rejected) nodes.push({ kind: 'rejected', label: 'Rejected', count: c.rejected });
    if (c.infraFailure) nodes.push({ kind: 'infraFailure', label: 'Infra failures', count: c.infraFailure });
    return nodes;
  }

  /** The newest experts with how many times the trainer used each: curation seen at work. */
  private async experts(): Promise<BufferNode[]> {
    const path = this.state.bufferPath;
    if (!path) return [];
    let r;
    try {
      r = await this.state.client.request('buffer/list', {
        buffer: { path },
        filter: { source: 'expert' },
        sort: 'createdAt',
        descending: true,
        offset: 0,
        limit: EXPERTS_SHOWN,
      });
    } catch (e) {
      return [{ kind: 'none', label: `Experts: ${(e as Error).message}` }];
    }
    const nodes: BufferNode[] = r.rows.map((x) => ({
      kind: 'expertItem',
      label: (x.promptPreview || x.taskId).replace(/\s+/g, ' ').slice(0, 60),
      expert: x,
    }));
    if (r.total > r.rows.length)
      nodes.push({
        kind: 'none',
        label: `${(r.total - r.rows.length).toLocaleString('en-US')} more in the experience browser`,
      });
    return nodes;
  }

  private async synthesized(runId: string): Promise<BufferNode[]> {
    let r;
    try {
      r = await this.state.client.request('buffer/synthesized', { buffer: { runId }, runId });
    } catch (e) {
      return [{ kind: 'none', label: `Synthesized tasks: ${(e as Error).message}`, runId }];
    }
    if (r.total === 0) return [{ kind: 'none', label: `No synthesized tasks in run ${runId}`, runId }];
    return Object.entries(r.byOrigin).map(([origin, count]) => ({
      kind: 'synthOrigin',
      label: origin,
      count,
      tasks: r.tasks.filter((t) => t.origin === origin),
      runId,
    }));
  }

  getTreeItem(n: BufferNode): vscode.TreeItem {
    const collapsible =
      (n.kind === 'taskset' && n.runId) || n.kind === 'synthOrigin' || (n.kind === 'expert' && !!n.count);
    const item = new vscode.TreeItem(
      n.label,
      collapsible ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    item.id =
      n.kind === 'synthTask'
        ? `buffer.synthTask.${n.task!.id}`
        : n.kind === 'synthOrigin'
          ? `buffer.synthOrigin.${n.runId}.${n.label}`
          : `buffer.${n.kind}`;
    if (n.kind === 'taskset' && n.runId)
      item.tooltip = `Tasks of the buffer; expand for the tasks run ${n.runId} synthesized`;
    if (n.kind === 'synthTask') {
      const t = n.task!;
      item.description = `${t.origin} · from ${t.parent} · step ${t.step}`;
      item.tooltip = `${t.prompt}${t.answer !== undefined ? `\nAnswer: ${t.answer}` : ''}\n\n${t.id}: made by ${t.origin} from task ${t.parent} after explore step ${t.step}; its reference solution was checked by the run's reward.`;
    }
    if (n.kind === 'expertItem') {
      const x = n.expert!;
      const uses = x.useCount ?? 0;
      item.id = `buffer.expertItem.${x.id}`;
      item.description = `${uses ? `used ${uses}×` : 'not used yet'} · ${x.taskId}`;
      item.tooltip = `${x.promptPreview}\n\n${x.responsePreview}\n\n${x.id} (task ${x.taskId}): ${uses ? `used by the trainer ${uses} time${uses === 1 ? '' : 's'}` : 'not used by the trainer yet'}.`;
      item.command = {
        command: 'rftStudio.openExperienceBrowser',
        title: 'Open Experience Browser',
        arguments: [{ source: 'expert', taskId: x.taskId }],
      };
    }
    item.iconPath = new vscode.ThemeIcon(ICONS[n.kind]);
    // Grouped digits, as the experience browser writes them (3,360, not 3360).
    if (n.count !== undefined) item.description = n.count.toLocaleString('en-US');
    item.contextValue = `rftBuffer.${n.kind}`;
    if (n.kind === 'none' && !n.runId) item.command = { command: 'rftStudio.openBuffer', title: 'Open Buffer…' };
    else if (n.kind === 'usual' || n.kind === 'expert') {
      item.command = {
        command: 'rftStudio.openExperienceBrowser',
        title: 'Open Experience Browser',
        arguments: [{ source: n.kind }],
      };
    }
    return item;
  }
}
