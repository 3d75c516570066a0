// CodeLens on taskset files: above each task, how the current run does on it (rollouts, the
// fraction with the full reward, mean reward), from the run's buffer (`buffer/taskStats`).
// Refreshed as the run reports metrics, at most once per REFRESH_MS.
import * as vscode from 'vscode';
import type { RunInfo, TaskStats } from '../backend/core/protocol.js';
import type { BackendClient } from './backend/client.js';
import { looksLikeTaskset } from './diagnostics.js';
import type { StudioState } from './state.js';

export const REFRESH_MS = 3000;

export interface TaskLine {
  line: number;
  id: string;
}

/** The 0-based line where each task's id is written, per file format (JSONL / JSON / YAML / CSV). */
export function taskIdLines(text: string, file: string): TaskLine[] {
  const lines = text.split(/\r?\n/);
  const out: TaskLine[] = [];
  if (/\.jsonl$/i.test(file)) {
    lines.forEach((l, i) => {
      if (!l.trim()) return;
      try {
        const id = (JSON.parse(l) as { id?: unknown }).id;
        if (typeof id === 'string' || typeof id === 'number') out.push({ line: i, id: String(id) });
      } catch {
        // a bad line is the diagnostics' business
      }
    });
  } else if (/\.json$/i.test(file)) {
    const re = /"id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))/;
    lines.forEach((l, i) => {
      const m = re.exec(l);
      if (m) out.push({ line: i, id: m[1] ?? m[2]! });
    });
  } else if (/\.ya?ml$/i.test(file)) {
    // `- id: x` or `  id: x` at the start of a task mapping (top-level list of tasks, or under `tasks:`).
    const re = /^\s*(?:-\s+)?id\s*:\s*(['"]?)([^'"#]+?)\1\s*(?:#.*)?$/;
    lines.forEach((l, i) => {
      const m = re.exec(l);
      if (m) out.push({ line: i, id: m[2]! });
    });
  } else if (/\.csv$/i.test(file)) {
    const header = splitCsv(lines[0] ?? '');
    const col = header.findIndex((h) => h.trim().toLowerCase() === 'id');
    if (col < 0) return out;
    lines.forEach((l, i) => {
      if (i === 0 || !l.trim()) return;
      const id = splitCsv(l)[col]?.trim();
      if (id) out.push({ line: i, id });
    });
  }
  return out;
}

function splitCsv(line: string): string[] {
  const cells: string[] = [];
  let cur = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') (cur += '"'), i++;
      else if (c === '"') quoted = false;
      else cur += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') cells.push(cur), (cur = '');
    else cur += c;
  }
  cells.push(cur);
  return cells;
}

export function lensTitle(s: TaskStats): string {
  const passed = Math.round(s.passRate * s.rollouts);
  return `$(pass) ${passed}/${s.rollouts} passed (${(100 * s.passRate).toFixed(0)}%) · mean reward ${s.meanReward.toFixed(2)}`;
}

/** The run whose results the lenses show: the active one, else the newest. */
export function currentRun(runs: RunInfo[]): RunInfo | undefined {
  const byNewest = [...runs].sort((a, b) => (b.updatedAt ?? b.createdAt ?? 0) - (a.updatedAt ?? a.createdAt ?? 0));
  return byNewest.find((r) => r.status === 'running') ?? byNewest.find((r) => r.status === 'paused') ?? byNewest[0];
}

export class TaskPassRateLens implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.emitter.event;
  private stats = new Map<string, TaskStats>();
  private runId: string | undefined;
  private lastFetch = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly subs: { dispose(): void }[] = [];

  constructor(
    private readonly client: BackendClient,
    private readonly state: StudioState,
    private readonly refreshMs = REFRESH_MS,
    /** Which files are tasksets (by folder, by a config, by their records: src/taskset-readings.ts). */
    private readonly isTaskset: (file: string) => boolean = looksLikeTaskset,
  ) {
    this.subs.push(
      state.onDidChange((what) => what === 'runs' && this.schedule()),
      client.onNotification('run/metrics', (m) => m.runId === this.runId && this.schedule()),
    );
  }

  /** Fetch again soon (throttled: at most one request per refreshMs). */
  schedule(): void {
    if (this.timer) return;
    const wait = Math.max(0, this.lastFetch + this.refreshMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.refresh().catch(() => undefined);
    }, wait);
  }

  async refresh(): Promise<void> {
    this.lastFetch = Date.now();
    const run = currentRun(this.state.runs);
    this.runId = run?.id;
    const rows =
      run && this.client.capabilities?.buffer
        ? await this.client.request('buffer/taskStats', { buffer: { runId: run.id }, runId: run.id })
        : [];
    this.stats = new Map(rows.map((r) => [r.taskId, r]));
    this.emitter.fire();
  }

  provideCodeLenses(doc: vscode.TextDocument): vscode.CodeLens[] {
    if (!this.runId || this.stats.size === 0 || !this.isTaskset(doc.uri.fsPath)) return [];
    const lenses: vscode.CodeLens[] = [];
    for (const { line, id } of taskIdLines(doc.getText(), doc.uri.fsPath)) {
      const s = this.stats.get(id);
      if (!s) continue;
      lenses.push(
        new vscode.CodeLens(new vscode.Range(line, 0, line, 0), {
          title: lensTitle(s),
          tooltip: `Task ${id} in run ${this.runId}: ${s.rollouts} rollouts, ${(100 * s.passRate).toFixed(1)}% with the full reward, mean reward ${s.meanReward.toFixed(3)}. Click to browse its experiences.`,
          command: 'rftStudio.openExperienceBrowser',
          arguments: [{ taskId: id }],
        }),
      );
    }
    return lenses;
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    for (const s of this.subs) s.dispose();
    this.emitter.dispose();
  }
}
