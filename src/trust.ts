// Untrusted workspaces may browse (buffer, runs, tasksets) but not start training or run custom
// workflows: those commands check here (package.json also disables them via `enablement`).
import * as vscode from 'vscode';

export function requireTrust(action: string): boolean {
  if (vscode.workspace.isTrusted) return true;
  void vscode.window
    .showWarningMessage(
      `${action} needs a trusted workspace: it runs code and writes files. You can still browse runs and the buffer.`,
      'Manage Workspace Trust',
    )
    .then((pick) => {
      if (pick) void vscode.commands.executeCommand('workbench.trust.manage');
    });
  return false;
}
