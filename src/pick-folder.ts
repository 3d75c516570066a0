// "Browse…" of the pick lists that offer a cache or a folder (Import Model, Open Dataset): one folder,
// starting in the workspace.
import * as vscode from 'vscode';

export async function browseFolder(title: string, openLabel: string): Promise<string | undefined> {
  const root = vscode.workspace.workspaceFolders?.[0]?.uri;
  const picked = await vscode.window.showOpenDialog({
    canSelectFolders: true,
    canSelectFiles: false,
    canSelectMany: false,
    title,
    openLabel,
    ...(root ? { defaultUri: root } : {}),
  });
  return picked?.[0]?.fsPath;
}
