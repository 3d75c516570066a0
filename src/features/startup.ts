// What runs each time the backend (re)starts: the runs first (the status bar names a running run at
// once), then every taskset and run config checked, the buffer opened (the rftStudio.bufferPath
// setting, else the current run's) and the pass-rate lens refreshed.
import * as vscode from 'vscode';
import { isAbsolute } from 'node:path';
import type { BackendClient } from '../backend/client.js';
import { looksLikeTaskset } from '../diagnostics.js';
import { isRunConfig } from '../config-diagnostics.js';
import type { RunMonitor } from '../run-events.js';
import type { StudioState } from '../state.js';
import { currentRun, type TaskPassRateLens } from '../taskset-lens.js';
import { toVs } from './disposable.js';
import type { TasksetChecks } from './taskset-checks.js';

export interface StartupDeps {
  client: BackendClient;
  output: vscode.LogOutputChannel;
  state: StudioState;
  checks: TasksetChecks;
  monitor: RunMonitor;
  lens: TaskPassRateLens;
}

export function registerStartup(context: vscode.ExtensionContext, d: StartupDeps): void {
  context.subscriptions.push(
    toVs(d.client.onStarted(() => void startup(d).catch((e) => d.output.warn(`startup: ${String(e)}`)))),
  );
}

async function startup(d: StartupDeps): Promise<void> {
  const { client: c, state } = d;
  const { readings, diagnostics, configs } = d.checks;
  // The runs first (the status bar names a running run at once, not after every taskset is checked).
  const runsRead = c.capabilities?.runs
    ? state.refreshRuns().catch((e) => d.output.warn(`runs: ${String(e)}`))
    : Promise.resolve();
  await readings.refresh();
  const files = await d.checks.rescan();
  for (const doc of vscode.workspace.textDocuments) {
    if (isRunConfig(doc.uri.fsPath)) await configs.check(doc, true).catch(() => undefined);
    else await diagnostics.check(doc);
  }
  // Taskset files outside tasksets/ (found by their content or named by a config) are not opened yet: check them too.
  for (const f of files)
    if (!looksLikeTaskset(f.fsPath) && !vscode.workspace.textDocuments.some((doc) => doc.uri.fsPath === f.fsPath))
      diagnostics.apply(await d.checks.validate(f.fsPath));
  await runsRead;
  // Runs that existed before this window are history, not news.
  d.monitor.know(state.runs);
  const bp = vscode.workspace.getConfiguration('rftStudio').get<string>('bufferPath')?.trim();
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  if (bp && !state.bufferPath)
    await state.openBuffer({ path: root && !isAbsolute(bp) ? vscode.Uri.joinPath(root, bp).fsPath : bp });
  // No buffer set: follow the current run's.
  const run = currentRun(state.runs);
  if (!state.bufferPath && run) await state.openBuffer({ runId: run.id });
  await d.lens.refresh();
}
