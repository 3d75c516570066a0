// Taskset commands: create one from a domain template, validate the active / chosen file.
import * as vscode from 'vscode';
import type { Domain } from '../../backend/core/types.js';
import { TASKSET_EXTENSIONS } from '../diagnostics.js';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';
import { DOMAINS, tasksetTemplate } from '../templates.js';

export async function newTaskset(s: Services): Promise<vscode.Uri | undefined> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) {
    void vscode.window.showWarningMessage('Open a folder first: the taskset is created in the workspace.');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    DOMAINS.map((d) => ({ label: d.label, detail: d.detail, domain: d.domain })),
    { title: 'New taskset: domain', ignoreFocusOut: true },
  );
  if (!pick) return undefined;
  const name = await vscode.window.showInputBox({
    title: 'New taskset: file name',
    value: `tasksets/${pick.domain}.jsonl`,
    ignoreFocusOut: true,
    validateInput: (v) =>
      /\.(jsonl|json|yaml|yml|csv)$/.test(v) ? undefined : 'end the name with .jsonl, .json, .yaml or .csv',
  });
  if (!name) return undefined;
  const uri = vscode.Uri.joinPath(folder.uri, name);
  try {
    await vscode.workspace.fs.stat(uri);
    void vscode.window.showWarningMessage(`${name} already exists; not overwritten.`);
    return undefined;
  } catch {
    /* does not exist: create it */
  }
  await vscode.workspace.fs.writeFile(uri, new TextEncoder().encode(tasksetTemplate(pick.domain as Domain)));
  await vscode.window.showTextDocument(uri);
  void s.tasksets.refresh();
  return uri;
}

export async function validateTaskset(s: Services, arg?: vscode.Uri): Promise<void> {
  const uri = arg ?? vscode.window.activeTextEditor?.document.uri;
  if (!uri) {
    void vscode.window.showWarningMessage('Open a taskset file (or pick one in the Tasksets view) to validate it.');
    return;
  }
  // A file that is no taskset (a .py, a .md) is told so, not put in Problems for good.
  if (!TASKSET_EXTENSIONS.some((e) => uri.fsPath.toLowerCase().endsWith(e))) {
    s.diagnostics.collection.delete(uri);
    void vscode.window.showWarningMessage(
      `${vscode.workspace.asRelativePath(uri)} is not a taskset file: tasksets are ${TASKSET_EXTENSIONS.join(', ')}.`,
    );
    return;
  }
  const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  try {
    // Read as the workspace's config maps it (or with the detected mapping), as Problems reads it.
    const r = await s.diagnostics.validateFile(uri.fsPath, doc?.isDirty ? doc.getText() : undefined);
    const errors = r.issues.filter((i) => i.severity === 'error').length;
    if (errors)
      void vscode.window.showWarningMessage(
        `${vscode.workspace.asRelativePath(uri)}: ${r.tasks} tasks valid, ${errors} bad record${errors === 1 ? '' : 's'} (see Problems).`,
      );
    else
      void vscode.window.showInformationMessage(
        `${vscode.workspace.asRelativePath(uri)}: ${r.tasks} tasks, no errors.`,
      );
  } catch (err) {
    await showBackendError('Validate taskset', err, s.output);
  }
}
