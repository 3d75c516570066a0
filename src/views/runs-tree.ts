// Sidebar "Runs": status, step and reward of each run, with inline stop / resume
// (menus in package.json select on contextValue rftRun.<status>).
import * as vscode from 'vscode';
import type { RunInfo, RunModelInfo } from '../../backend/core/protocol.js';
import { formatParams } from '../models/model-card.js';
import type { StudioState } from '../state.js';
import { shortRunId, startedAt } from '../commands/run-picks.js';

const ICON: Record<RunInfo['status'], string> = {
  created: 'circle-outline',
  running: 'sync~spin',
  paused: 'debug-pause',
  stopped: 'debug-stop',
  completed: 'pass',
  failed: 'error',
};

/** A checkpoint run's model in a few words (`Qwen2ForCausalLM 494M LoRA r8`); a preset run's is in the tooltip. */
export function shortModel(m: RunModelInfo | undefined): string | undefined {
  if (!m || m.source !== 'checkpoint') return undefined;
  return [
    m.architecture,
    m.parameters !== undefined ? formatParams(m.parameters) : undefined,
    m.loraRank !== undefined ? `LoRA r${m.loraRank}` : undefined,
  ]
    .filter(Boolean)
    .join(' ');
}

export function describeRun(r: RunInfo): string {
  const parts: string[] = [r.status];
  if (r.step !== undefined) parts.push(r.totalSteps ? `step ${r.step}/${r.totalSteps}` : `step ${r.step}`);
  if (r.reward !== undefined) parts.push(`reward ${r.reward.toFixed(3)}`);
  const model = shortModel(r.model);
  if (model) parts.push(model);
  return parts.join(' · ');
}

/** The Runs view's tooltip: what the run is, and for one that failed or stopped, why. */
export function runTooltip(r: RunInfo): string {
  const lines = [r.id, describeRun(r)];
  if (r.statusReason) lines.push(`${r.status === 'failed' ? 'failed because' : 'reason'}: ${r.statusReason}`);
  if (r.model) lines.push(`model: ${r.model.label}`, `tokenizer: ${r.model.tokenizer}`);
  if (r.configPath) lines.push(`config: ${r.configPath}`);
  if (r.checkpoints?.length)
    lines.push(`checkpoints: ${r.checkpoints.length} (newest v${Math.max(...r.checkpoints.map((c) => c.version))})`);
  return lines.join('\n');
}

/** The run's label: its name (its id only when it has none). The id is long and went first, pushing the status out of sight. */
export function runLabel(r: RunInfo): string {
  return r.name ?? r.id;
}

/**
 * The run's description: status first (so it stays in sight), step, reward, model; where another run
 * has the same name, its start time and short id too (`failed · step 37/50 · started 29 Nov 07:15 · #k3f9`).
 */
export function runDescription(r: RunInfo, all: readonly RunInfo[]): string {
  const twin = !!r.name && all.some((o) => o !== r && o.id !== r.id && o.name === r.name);
  if (!twin) return describeRun(r);
  const when = r.createdAt !== undefined ? ` · started ${startedAt(r.createdAt)}` : '';
  return `${describeRun(r)}${when} · #${shortRunId(r.id)}`;
}

export class RunsTree implements vscode.TreeDataProvider<RunInfo> {
  private readonly emitter = new vscode.EventEmitter<RunInfo | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;

  constructor(private readonly state: StudioState) {
    state.onDidChange((what) => what === 'runs' && this.emitter.fire(undefined));
  }

  getChildren(): RunInfo[] {
    return [...this.state.runs].sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0));
  }

  getTreeItem(r: RunInfo): vscode.TreeItem {
    const item = new vscode.TreeItem(runLabel(r), vscode.TreeItemCollapsibleState.None);
    item.id = `run.${r.id}`;
    const why = r.status === 'failed' && r.statusReason ? `: ${r.statusReason.split('\n')[0]!.slice(0, 80)}` : '';
    // Asked to stop or pause: said until the run ends its step (which can take a while).
    const pending = this.state.pending.get(r.id);
    const desc = runDescription(r, this.state.runs);
    item.description = pending ? `${pending} · ${desc}` : desc + why;
    item.iconPath = new vscode.ThemeIcon(ICON[r.status] ?? 'circle-outline');
    // A run whose resume would be refused again (resume-state.ts) gets no inline Resume.
    item.contextValue = `rftRun.${r.status}${r.resumable === false && r.status !== 'running' ? '.noresume' : ''}`;
    item.tooltip = runTooltip(r);
    item.command = { command: 'rftStudio.openDashboard', title: 'Open Dashboard', arguments: [r.id] };
    return item;
  }
}
