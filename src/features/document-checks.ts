// Open documents checked as they change: a taskset while typing and on save (the backend watches the
// files on disk), a run config deep on open and save (registry names, as `rft run` would refuse them),
// and a closed file's Problems back to what is on disk.
import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { isRunConfig } from '../config-diagnostics.js';
import type { TasksetChecks } from './taskset-checks.js';

export function registerDocumentChecks(
  context: vscode.ExtensionContext,
  k: Pick<TasksetChecks, 'diagnostics' | 'configs' | 'forgetFile'>,
): void {
  const { diagnostics, configs } = k;
  context.subscriptions.push(
    vscode.workspace.onDidOpenTextDocument((d) =>
      isRunConfig(d.uri.fsPath) ? void configs.check(d, true).catch(() => undefined) : diagnostics.schedule(d),
    ),
    vscode.workspace.onDidChangeTextDocument((e) =>
      isRunConfig(e.document.uri.fsPath) ? configs.schedule(e.document) : diagnostics.schedule(e.document),
    ),
    vscode.workspace.onDidSaveTextDocument(
      (d) => void (isRunConfig(d.uri.fsPath) ? configs.check(d, true) : diagnostics.check(d)).catch(() => undefined),
    ),
    // Closed with unsaved edits dropped: Problems shows the file on disk again (a file gone: nothing).
    vscode.workspace.onDidCloseTextDocument(
      (d) =>
        d.uri.scheme === 'file' &&
        void (existsSync(d.uri.fsPath)
          ? diagnostics.check({ uri: d.uri, getText: () => '', isDirty: false }).catch(() => undefined)
          : k.forgetFile(d.uri)),
    ),
  );
}
