// A run's life, told to the person: every status change, checkpoint, stage and eval result is a
// line in the RFT Studio output channel; a failure says why (the registry's statusReason and the
// last lines of the run's log) in a notification with "Show Log" / "Open Dashboard" / "Resume" (Resume
// only when resuming can work: RunInfo.resumable);
// a run that finishes or stops says so too.
import * as vscode from 'vscode';
import type { MetricsPoint, RunInfo } from '../backend/core/protocol.js';
import type { BackendClient } from './backend/client.js';
import { errorFix, oneLineReason, splitFix, toastLine } from './error-lines.js';

export interface RunEvent {
  level: 'info' | 'warn' | 'error';
  line: string;
}

/** What changed between two sightings of a run (prev undefined: first seen while running). */
export function runEvents(prev: RunInfo | undefined, next: RunInfo): RunEvent[] {
  const name = next.name && next.name !== next.id ? `${next.name} (${next.id})` : next.id;
  const out: RunEvent[] = [];
  if (!prev || prev.status !== next.status) {
    const at = next.step !== undefined ? ` at step ${next.step}${next.totalSteps ? `/${next.totalSteps}` : ''}` : '';
    if (next.status === 'failed')
      out.push({
        level: 'error',
        line: `Run ${name} failed${at}: ${next.statusReason ?? 'no reason recorded (see its log)'}`,
      });
    else if (next.status === 'running')
      out.push({
        level: 'info',
        line: `Run ${name} ${prev ? `${prev.status} -> running` : 'running'}${at}${next.configPath ? ` (config ${next.configPath})` : ''}`,
      });
    else
      out.push({
        level: 'info',
        line: `Run ${name} ${next.status}${at}${next.statusReason ? `: ${next.statusReason}` : ''}`,
      });
  }
  const before = new Set((prev?.checkpoints ?? []).map((c) => c.version));
  for (const c of next.checkpoints ?? []) {
    if (prev && !before.has(c.version))
      out.push({
        level: 'info',
        line: `Run ${name}: checkpoint v${c.version}${c.step !== undefined ? ` (step ${c.step})` : ''} at ${c.path}`,
      });
  }
  return out;
}

/** Lines for a metrics point: a stage change and an eval result. */
export function metricEvents(p: MetricsPoint, prevStage: string | undefined): RunEvent[] {
  const out: RunEvent[] = [];
  if (p.stage && p.stage !== prevStage)
    out.push({ level: 'info', line: `Run ${p.runId}: stage '${p.stage}' from step ${p.step}` });
  const acc = p.values.eval_accuracy;
  if (acc !== undefined)
    out.push({ level: 'info', line: `Run ${p.runId}: eval accuracy ${(100 * acc).toFixed(1)}% at step ${p.step}` });
  for (const w of p.warnings ?? []) out.push({ level: 'warn', line: `Run ${p.runId}: ${w.message}` });
  const skipped = p.values.skipped_experiences;
  if (skipped)
    out.push({
      level: 'warn',
      line: `Run ${p.runId}: step ${p.step} skipped ${skipped} experience(s) the trainer could not use (see the run's log)`,
    });
  return out;
}

/** A run's checkpoint versions as one string: a pruned one replaced by a new one keeps the count. */
const versions = (r: RunInfo): string => (r.checkpoints ?? []).map((c) => c.version).join(',');

export interface RunMonitorDeps {
  client: Pick<BackendClient, 'request' | 'onNotification'>;
  output: Pick<vscode.LogOutputChannel, 'info' | 'warn' | 'error' | 'show'>;
  openDashboard(runId: string): Promise<void>;
}

export class RunMonitor implements vscode.Disposable {
  private readonly seen = new Map<string, RunInfo>();
  private readonly stages = new Map<string, string>();
  private readonly subs: { dispose(): void }[] = [];

  constructor(private readonly d: RunMonitorDeps) {
    this.subs.push(
      d.client.onNotification('run/status', (r) => void this.status(r)),
      d.client.onNotification('run/metrics', (p) => this.metrics(p)),
    );
  }

  private ready = false;

  /** Runs already known (from runs/list at startup): remembered, not announced. */
  know(runs: RunInfo[]): void {
    for (const r of runs) if (!this.seen.has(r.id)) this.seen.set(r.id, r);
    this.ready = true;
  }

  /**
   * The run list as re-read from the registry: a run that failed before the live poller saw it
   * running (a bad config, a missing taskset) is only ever seen here.
   */
  follow(runs: RunInfo[]): void {
    if (!this.ready) return;
    for (const r of runs) {
      const prev = this.seen.get(r.id);
      if (!prev || prev.status !== r.status || versions(prev) !== versions(r)) void this.status(r);
    }
  }

  private write(e: RunEvent): void {
    this.d.output[e.level](e.line);
  }

  async status(r: RunInfo): Promise<void> {
    const prev = this.seen.get(r.id);
    // The registry keeps the step of the last checkpoint; a run seen running got further: a run
    // that fails or stops is told at the step it reached.
    if (prev?.status === 'running' && r.status !== 'running' && (prev.step ?? -1) > (r.step ?? -1))
      r = { ...r, step: prev.step };
    this.seen.set(r.id, r);
    for (const e of runEvents(prev, r)) this.write(e);
    if (prev?.status === r.status) return;
    if (r.status === 'failed') await this.failed(r);
    else if (r.status === 'completed')
      void this.notify(
        'info',
        `Run ${r.name ?? r.id} completed${r.step !== undefined ? ` after ${r.step} steps` : ''}.`,
        r,
      );
  }

  private readonly warned = new Set<string>();

  metrics(p: MetricsPoint): void {
    for (const e of metricEvents(p, this.stages.get(p.runId))) {
      this.write(e);
      // A warning that matters (experiences the trainer skipped) is a toast too, once per run.
      if (e.level === 'warn' && !this.warned.has(p.runId)) {
        this.warned.add(p.runId);
        void Promise.resolve(vscode.window.showWarningMessage(e.line, 'Show Log')).then(
          (pick) => pick && this.d.output.show(),
        );
      }
    }
    if (p.stage) this.stages.set(p.runId, p.stage);
  }

  /** The reason and the log's last lines: in the output channel and the notification. */
  async failed(r: RunInfo): Promise<void> {
    const log = await this.d.client.request('runs/log', { runId: r.id, lines: 15 }).catch(() => undefined);
    if (log?.lines.length) this.d.output.error(`Last lines of ${log.path}:\n  ${log.lines.join('\n  ')}`);
    const reason =
      r.statusReason ??
      [...(log?.lines ?? [])].reverse().find((l) => /error|failed|exceed/i.test(l)) ??
      log?.lines.at(-1) ??
      'no reason recorded';
    // The cause in one line (a died process's log lines, a config's list of problems stay in the log).
    const fix = errorFix(reason);
    // A refusal that says its fix: what is wrong, short, then that fix (error-lines.ts toastLine).
    const why = splitFix(reason).fix ? toastLine(reason) : `${oneLineReason(reason)}${fix ? ` ${fix}` : ''}`;
    await this.notify(
      'error',
      `Run ${r.name ?? r.id} failed${r.step !== undefined ? ` at step ${r.step}` : ''}: ${why}`,
      r,
      log?.path,
    );
  }

  private async notify(kind: 'info' | 'error', message: string, r: RunInfo, logPath?: string): Promise<void> {
    // Resume only where it can work: not for a run the same config would refuse again (resume-state.ts).
    const actions =
      kind === 'error'
        ? ['Show Log', 'Open Dashboard', ...(r.resumable === false ? [] : ['Resume'])]
        : ['Open Dashboard'];
    const show = kind === 'error' ? vscode.window.showErrorMessage : vscode.window.showInformationMessage;
    const pick = await show(message, ...actions);
    if (pick === 'Show Log') {
      if (logPath) await vscode.window.showTextDocument(vscode.Uri.file(logPath));
      else this.d.output.show();
    } else if (pick === 'Open Dashboard') await this.d.openDashboard(r.id);
    else if (pick === 'Resume') await vscode.commands.executeCommand('rftStudio.resumeTraining', r.id);
  }

  dispose(): void {
    for (const s of this.subs) s.dispose();
  }
}
