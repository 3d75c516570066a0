// The palette's and the views' commands (package.json contributes.commands), registered from activate()
// in one call. Every command is guarded: a failure the command does not show itself is told where the
// user acted, with Show Log (errors.ts).
import * as vscode from 'vscode';
import type { RunInfo } from '../../backend/core/protocol.js';
import type { Services } from '../services.js';
import { guardCommand } from '../errors.js';
import { registerModels } from '../models/register.js';
import { addSelectionAsExpert, exportBuffer, openBuffer } from './buffer.js';
import { mapFields, type FieldPreset } from './map-fields.js';
import { openDataset } from './open-dataset.js';
import { openReport } from './report.js';
import { openTensorBoard } from './tensorboard.js';
import { trainDpo } from './dpo.js';
import { trainRewardModel } from './reward-model.js';
import { newTaskset, validateTaskset } from './taskset.js';
import { copyServe, servePolicy } from './serve.js';
import { evaluateCheckpoint, pauseTraining, resumeTraining, startTraining, stopTraining } from './training.js';

/** Registers one command, guarded and titled as package.json titles it (the Models view's commands use it too). */
export type RegisterCommand = (id: string, fn: (...args: never[]) => unknown) => void;

export function registerCommands(s: Services): void {
  const titles = commandTitles(s.context.extension?.packageJSON);
  const reg: RegisterCommand = (id, fn) =>
    void s.context.subscriptions.push(
      vscode.commands.registerCommand(id, guardCommand(titles.get(id) ?? id, fn, s.output)),
    );
  reg('rftStudio.newTaskset', () => newTaskset(s));
  reg('rftStudio.validateTaskset', (uri?: vscode.Uri) => validateTaskset(s, uri));
  reg('rftStudio.mapFields', (uri?: vscode.Uri, preset?: FieldPreset) => mapFields(s, uri, preset));
  reg('rftStudio.openDataset', () => openDataset(s));
  reg('rftStudio.startTraining', (uri?: vscode.Uri) => startTraining(s, uri));
  reg('rftStudio.servePolicy', (uri?: vscode.Uri) => servePolicy(s, uri));
  reg('rftStudio.copyServeUrl', (arg?: unknown) => copyServe(s, arg, 'url'));
  reg('rftStudio.copyServeToken', (arg?: unknown) => copyServe(s, arg, 'token'));
  reg('rftStudio.stopTraining', (arg?: unknown) => stopTraining(s, arg));
  reg('rftStudio.pauseTraining', (arg?: unknown) => pauseTraining(s, arg));
  reg('rftStudio.resumeTraining', (arg?: unknown) => resumeTraining(s, arg));
  // A Uri (explorer), a RunInfo (Runs view: that run's checkpoints) or nothing (palette).
  reg('rftStudio.evaluateCheckpoint', (arg?: vscode.Uri | RunInfo) => evaluateCheckpoint(s, arg));
  reg('rftStudio.openReport', (arg?: unknown) => openReport(s, arg));
  reg('rftStudio.openTensorBoard', (arg?: unknown) => openTensorBoard(s, arg));
  reg('rftStudio.openDashboard', (runId?: string) => s.openDashboard(typeof runId === 'string' ? runId : undefined));
  reg('rftStudio.openExperienceBrowser', (o?: { source?: 'usual' | 'expert'; taskId?: string }) =>
    s.openExperienceBrowser(o),
  );
  reg('rftStudio.addSelectionAsExpert', () => addSelectionAsExpert(s));
  reg('rftStudio.exportBuffer', () => exportBuffer(s));
  reg('rftStudio.trainDpo', (arg?: unknown) => trainDpo(s, arg));
  reg('rftStudio.trainRewardModel', (runId?: unknown) => trainRewardModel(s, runId));
  reg('rftStudio.openBuffer', (arg?: vscode.Uri | string) => openBuffer(s, arg));
  // Import Model…, Export Checkpoint…, the Models view and its actions.
  registerModels(s, reg);
  reg('rftStudio.restartBackend', () => s.client.restart());
  reg('rftStudio.refresh', async () => {
    await Promise.all([s.state.refreshRuns(), s.state.refreshCounts(), s.tasksets.refresh()]);
  });
}

/** `rftStudio.startTraining` -> `Start Training…` (package.json), for failure notifications. */
function commandTitles(pkg: unknown): Map<string, string> {
  const cmds =
    (pkg as { contributes?: { commands?: { command: string; title: string }[] } } | undefined)?.contributes?.commands ??
    [];
  return new Map(cmds.map((c) => [c.command, c.title.replace(/…$/, '')]));
}
