// The Models view and the model commands, registered by commands/register.ts with its guarded registrar.
import * as vscode from 'vscode';
import type { Services } from '../services.js';
import { ModelsTree } from './models-tree.js';
import { exportCheckpoint, removeModel, revealModel, trainWithModel } from './model-commands.js';
import { importModel, modelsChanged } from './import-model.js';
import type { RegisterCommand } from '../commands/register.js';

export function registerModels(s: Services, reg: RegisterCommand): ModelsTree {
  const tree = new ModelsTree(s.client);
  const view = vscode.window.createTreeView('rftStudio.models', { treeDataProvider: tree });
  const refresh = () => tree.refresh();
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
