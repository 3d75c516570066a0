// Sidebar "Workers": every process of a distributed run (PostgreSQL buffer, `rft explorer` /
// `rft trainer` on any machine) as its last heartbeat left it — host, state, model version,
// throughput, heartbeat age — polled from the backend's `workers/list` while a run is configured.
import * as vscode from 'vscode';
import type { WorkerInfo } from '../../backend/core/protocol.js';

/** A heartbeat older than this marks the worker as possibly gone (leases are a few seconds). */
export const STALE_HEARTBEAT_S = 10;

export interface WorkersSource {
  buffer: string;
  runId: string;
}

export type FetchWorkers = (
  src: WorkersSource,
) => Promise<{ jobs: Record<string, number>; workers: WorkerInfo[]; trainerLost?: string | null }>;

export function describeWorker(w: WorkerInfo): string {
  const parts = [w.state];
  if (w.modelVersion !== null) parts.push(`v${w.modelVersion}`);
  parts.push(`${w.throughput.toFixed(1)} ${w.role === 'trainer' ? 'steps' : 'exp'}/s`);
  parts.push(`${Math.round(w.ageS)} s ago`);
  return parts.join(' · ');
}

export function describeJobs(jobs: Record<string, number>): string {
  return Object.entries(jobs)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${state} ${n}`)
    .join(' · ');
}

export class WorkersTree implements vscode.TreeDataProvider<WorkerInfo> {
  private readonly emitter = new vscode.EventEmitter<WorkerInfo | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private workers: WorkerInfo[] = [];
  /** What the view says above the list: job counts, or why there is nothing. */
  summary = '';

  constructor(private readonly fetch: FetchWorkers) {}

  /** The distributed run from the settings, or undefined when none is set. */
  static source(): WorkersSource | undefined {
    const c = vscode.workspace.getConfiguration('rftStudio');
    const buffer = c.get<string>('scaleOut.buffer')?.trim();
    const runId = c.get<string>('scaleOut.runId')?.trim();
    return buffer && runId ? { buffer, runId } : undefined;
  }

  async refresh(src = WorkersTree.source()): Promise<void> {
    if (!src) {
      this.workers = [];
      this.summary = '';
    } else {
      try {
        const r = await this.fetch(src);
        this.workers = [...r.workers].sort(
          (a, b) => a.role.localeCompare(b.role) || a.host.localeCompare(b.host) || a.pid - b.pid,
        );
        // A lost trainer first: its row may be pruned, and explorers only wait on it.
        const jobs = describeJobs(r.jobs) || 'no jobs';
        this.summary = r.trainerLost ? `${r.trainerLost} · ${jobs}` : jobs;
      } catch (e) {
        this.workers = [];
        this.summary = `cannot read workers: ${(e as Error).message}`;
      }
    }
    this.emitter.fire(undefined);
  }

  getChildren(): WorkerInfo[] {
    return this.workers;
  }

  getTreeItem(w: WorkerInfo): vscode.TreeItem {
    const item = new vscode.TreeItem(`${w.role} ${w.host}:${w.pid}`, vscode.TreeItemCollapsibleState.None);
    item.id = `worker.${w.id}`;
    item.description = describeWorker(w);
    const stale = w.ageS > STALE_HEARTBEAT_S;
    item.iconPath = stale
      ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('list.warningForeground'))
      : new vscode.ThemeIcon(w.role === 'trainer' ? 'flame' : 'server-process');
    item.contextValue = `rftWorker.${w.role}`;
    item.tooltip = [
      w.id,
      describeWorker(w),
      `done: ${w.done}`,
      w.detail ? `detail: ${w.detail}` : '',
      `started ${new Date(w.startedAt).toLocaleString()}`,
      stale ? `no heartbeat for ${Math.round(w.ageS)} s: the process may be gone or cut off` : '',
    ]
      .filter(Boolean)
      .join('\n');
    return item;
  }
}
