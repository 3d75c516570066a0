// The Models view and the model commands, registered from activate() in one call.
import * as vscode from 'vscode';
import type { Services } from '../services.js';
import { ModelsTree } from './models-tree.js';
import { exportCheckpoint, removeModel, revealModel, trainWithModel } from './model-commands.js';
import { importModel, modelsChanged } from './import-model.js';
import { guardCommand } from '../errors.js';

const TITLES: Record<string, string> = {
  'rftStudio.importModel': 'Import Model',
  'rftStudio.exportCheckpoint': 'Export Checkpoint',
  'rftStudio.trainWithModel': 'Start Training with this Model',
  'rftStudio.revealModel': 'Reveal Model Folder',
  'rftStudio.removeModel': 'Remove from Imported Models',
};

export function registerModels(s: Services): ModelsTree {
  const tree = new ModelsTree(s.client);
  const view = vscode.window.createTreeView('rftStudio.models', { treeDataProvider: tree });
  const refresh = () => tree.refresh();
  // A failure not shown by the command itself: one line with Show Log (errors.ts).
  const reg = (id: string, fn: (...args: never[]) => unknown) =>
    s.context.subscriptions.push(vscode.commands.registerCommand(id, guardCommand(TITLES[id] ?? id, fn, s.output)));
  reg('rftStudio.importModel', () => importModel(s));
  reg('rftStudio.exportCheckpoint', (uri?: vscode.Uri) => exportCheckpoint(s, uri));
  reg('rftStudio.trainWithModel', (arg?: unknown) => trainWithModel(s, arg));
  reg('rftStudio.revealModel', (arg?: unknown) => revealModel(arg));
  reg('rftStudio.removeModel', (arg?: unknown) => removeModel(s, arg));
  const configs = vscode.workspace.createFileSystemWatcher('**/*.rft.{yaml,yml}');
  const started = s.client.onStarted(refresh);
  s.context.subscriptions.push(
    view,
    configs,
    modelsChanged.event(refresh),
    configs.onDidChange(refresh),
    configs.onDidCreate(refresh),
    configs.onDidDelete(refresh),
    { dispose: () => started.dispose() },
  );
  return tree;
}
