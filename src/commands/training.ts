// Training commands: start (pick or create a config), stop, resume, evaluate a checkpoint. They
// need a trusted workspace; the backend answers NotAvailable until the coordinator is wired in.
import * as vscode from 'vscode';
import type { RunInfo } from '../../backend/core/protocol.js';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';
import { configTemplate } from '../templates.js';
import { requireTrust } from '../trust.js';
import { TASKSET_GLOB } from '../views/tasksets-tree.js';

export const CONFIG_GLOB = '**/*.rft.{yaml,yml}';

async function pickConfig(): Promise<vscode.Uri | undefined> {
  const configs = await vscode.workspace.findFiles(CONFIG_GLOB, '**/node_modules/**', 100);
  const CREATE = '$(add) Create a config from the template…';
  const pick = await vscode.window.showQuickPick([...configs.map((u) => vscode.workspace.asRelativePath(u)), CREATE], { title: 'Start training: config' });
  if (!pick) return undefined;
  if (pick !== CREATE) return configs.find((u) => vscode.workspace.asRelativePath(u) === pick);
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) return undefined;
  const tasksets = await vscode.workspace.findFiles(TASKSET_GLOB, '**/node_modules/**', 1);
  const uri = vscode.Uri.joinPath(folder.uri, 'train.rft.yaml');
  const ts = tasksets[0] ? vscode.workspace.asRelativePath(tasksets[0]) : 'tasksets/math.jsonl';
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(configTemplate(ts)));
  await vscode.window.showTextDocument(uri);
  return uri;
}

async function pickRun(s: Services, arg: unknown, want: RunInfo['status'][]): Promise<string | undefined> {
  if (typeof arg === 'string') return arg;
  if (arg && typeof arg === 'object' && 'id' in arg) return String((arg as RunInfo).id);
  const runs = s.state.runs.filter((r) => want.includes(r.status));
  if (runs.length === 0) {
    void vscode.window.showInformationMessage(`No run is ${want.join(' or ')}.`);
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(runs.map((r) => ({ label: r.name ?? r.id, description: r.status, id: r.id })), { title: 'Run' });
  return pick?.id;
}

export async function startTraining(s: Services, arg?: vscode.Uri): Promise<void> {
  if (!requireTrust('Starting training')) return;
  const uri = arg ?? (await pickConfig());
  if (!uri) return;
  // A config with problems is shown in Problems at once, instead of starting a run that dies.
  const issues = await s.configs.checkFile(uri).catch((e) => (s.output.warn(`config check: ${String(e)}`), []));
  if (issues.length) {
    const rel = vscode.workspace.asRelativePath(uri);
    s.output.error(`Start training: ${rel} has ${issues.length} problem${issues.length === 1 ? '' : 's'}:\n  ${issues.map((i) => `${rel}${i.line ? `:${i.line}` : ''}: ${i.field}: ${i.message}`).join('\n  ')}`);
    const pick = await vscode.window.showErrorMessage(`${rel}: ${issues.length} problem${issues.length === 1 ? '' : 's'} (first: ${issues[0]!.field}: ${issues[0]!.message}). The run was not started.`, 'Show Problems');
    if (pick) await vscode.commands.executeCommand('workbench.actions.view.problems');
    return;
  }
  try {
    s.output.info(`Starting a run from ${vscode.workspace.asRelativePath(uri)}…`);
    const run = await s.client.request('runs/start', { configPath: uri.fsPath });
    await s.state.refreshRuns();
    // The sidebar and the experience browser follow the new run's buffer.
    await s.state.openBuffer({ runId: run.id }).catch((e) => s.output.warn(`buffer of ${run.id}: ${String(e)}`));
    // A run that failed at once is told by the run monitor (reason, log, actions), not as "started".
    if (s.state.runs.find((r) => r.id === run.id)?.status !== 'failed') {
      void vscode.window.showInformationMessage(`Run ${run.id} started from ${vscode.workspace.asRelativePath(uri)}.`, 'Show Log').then((p) => p && s.output.show());
    }
    await s.openDashboard(run.id);
  } catch (err) {
    await showBackendError('Start training', err, s.output);
  }
}

export async function stopTraining(s: Services, arg?: unknown): Promise<void> {
  const id = await pickRun(s, arg, ['running', 'paused']);
  if (!id) return;
  try {
    await s.client.request('runs/stop', { runId: id });
    await s.state.refreshRuns();
  } catch (err) {
    await showBackendError('Stop training', err, s.output);
  }
}

export async function resumeTraining(s: Services, arg?: unknown): Promise<void> {
  if (!requireTrust('Resuming training')) return;
  const id = await pickRun(s, arg, ['paused', 'stopped', 'failed']);
  if (!id) return;
  try {
    await s.client.request('runs/resume', { runId: id });
    await s.state.refreshRuns();
    await s.state.openBuffer({ runId: id }).catch((e) => s.output.warn(`buffer of ${id}: ${String(e)}`));
  } catch (err) {
    await showBackendError('Resume training', err, s.output);
  }
}

export async function evaluateCheckpoint(s: Services, arg?: vscode.Uri): Promise<void> {
  if (!requireTrust('Evaluating a checkpoint')) return;
  const ckpt = arg ?? (await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, title: 'Checkpoint folder' }))?.[0];
  if (!ckpt) return;
  const tasksets = await vscode.workspace.findFiles(TASKSET_GLOB, '**/node_modules/**', 100);
  const HELD_OUT = "$(beaker) The run's held-out split";
  const ts = await vscode.window.showQuickPick([HELD_OUT, ...tasksets.map((u) => vscode.workspace.asRelativePath(u))], { title: 'Evaluate on taskset' });
  if (!ts) return;
  // '' asks the backend for the eval split of the run that owns the checkpoint.
  const taskset = ts === HELD_OUT ? '' : tasksets.find((u) => vscode.workspace.asRelativePath(u) === ts)!.fsPath;
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Evaluating ${vscode.workspace.asRelativePath(ckpt)}`, cancellable: true },
    async (_p, token) => {
      try {
        const req = s.client.request('runs/evaluate', { checkpoint: ckpt.fsPath, taskset });
        const r = await Promise.race([req, new Promise<null>((res) => token.onCancellationRequested(() => res(null)))]);
        if (r) void vscode.window.showInformationMessage(`Accuracy ${(100 * r.accuracy).toFixed(1)}% on ${r.tasks} tasks.`);
      } catch (err) {
        await showBackendError('Evaluate checkpoint', err, s.output);
      }
    },
  );
}
