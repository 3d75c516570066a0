// Buffer commands: open a buffer (run or file), export it as JSONL, add the editor selection as
// an expert example for a task the user picks or types.
import * as vscode from 'vscode';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';

export async function openBuffer(s: Services, arg?: vscode.Uri | string): Promise<void> {
  let ref: { path?: string; runId?: string } | undefined;
  if (typeof arg === 'string') ref = { runId: arg };
  else if (arg) ref = { path: arg.fsPath };
  else {
    const runs = s.state.runs.map((r) => ({ label: r.name ?? r.id, description: r.status, ref: { runId: r.id } }));
    const FILE = { label: '$(folder-opened) Open a buffer file…', description: '', ref: undefined as undefined | { runId: string } };
    const pick = await vscode.window.showQuickPick([...runs, FILE], { title: 'Open buffer', ignoreFocusOut: true });
    if (!pick) return;
    if (pick.ref) ref = pick.ref;
    else {
      const f = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { 'Buffer (SQLite)': ['sqlite', 'db'] }, title: 'Buffer file', ...inWorkspace() });
      if (!f?.[0]) return;
      ref = { path: f[0].fsPath };
    }
  }
  try {
    await s.state.openBuffer(ref);
  } catch (err) {
    await showBackendError('Open buffer', err, s.output);
  }
}

/** Dialogs start in the workspace folder, not the active file's. */
function inWorkspace(): { defaultUri?: vscode.Uri } {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  return root ? { defaultUri: root } : {};
}

export async function exportBuffer(s: Services): Promise<void> {
  if (!s.state.bufferPath) {
    void vscode.window.showWarningMessage('Open a buffer first (RFT Studio: Open Buffer).');
    return;
  }
  // Starts in the workspace (not the active file's folder), named after the buffer.
  const base = s.state.bufferPath.split(/[\\/]/).pop()!.replace(/\.[^.]*$/, '');
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  const target = await vscode.window.showSaveDialog({ filters: { JSONL: ['jsonl'] }, title: 'Export buffer as JSONL', ...(root ? { defaultUri: vscode.Uri.joinPath(root, `${base}.jsonl`) } : {}) });
  if (!target) return;
  await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Exporting buffer…' }, async () => {
    try {
      const r = await s.client.request('buffer/export', { buffer: { path: s.state.bufferPath }, file: target.fsPath });
      void vscode.window.showInformationMessage(`Exported ${r.written} experiences to ${vscode.workspace.asRelativePath(target)}.`);
    } catch (err) {
      await showBackendError('Export buffer', err, s.output);
    }
  });
}

export async function addSelectionAsExpert(s: Services): Promise<void> {
  const ed = vscode.window.activeTextEditor;
  const response = ed && !ed.selection.isEmpty ? ed.document.getText(ed.selection) : '';
  if (!response.trim()) {
    void vscode.window.showWarningMessage('Select the text that should become the expert response.');
    return;
  }
  if (!s.state.bufferPath) {
    void vscode.window.showWarningMessage('Open a buffer first (RFT Studio: Open Buffer).');
    return;
  }
  const taskId = await vscode.window.showInputBox({ title: 'Expert example: task id', prompt: 'Id of the task this answers (an existing task or a new one)', ignoreFocusOut: true });
  if (!taskId) return;
  const prompt = await vscode.window.showInputBox({ title: 'Expert example: prompt', prompt: 'The prompt of the task', ignoreFocusOut: true });
  if (prompt === undefined) return;
  try {
    const r = await s.client.request('feedback/addExpert', { buffer: { path: s.state.bufferPath }, taskId, prompt, response });
    void vscode.window.showInformationMessage(`Added expert example ${r.expertId} for task ${taskId}.`, 'Undo').then(async (pick) => {
      if (pick) await s.client.request('feedback/undo', { buffer: { path: s.state.bufferPath }, changeId: r.changeId });
    });
  } catch (err) {
    await showBackendError('Add expert example', err, s.output);
  }
}
