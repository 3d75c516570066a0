// Export Checkpoint… into a folder that already holds files: ask first (modal), and only then pass
// `force` (the backend then replaces the export's own files and keeps every other file there).
import * as vscode from 'vscode';
import { exportWrites, type ExportFormat } from './export-formats.js';

/** false: nothing there (no force needed); true: the user agreed to replace; undefined: the user said no. */
export async function confirmExportTarget(out: string, f: ExportFormat): Promise<boolean | undefined> {
  const uri = vscode.Uri.file(out);
  let st: vscode.FileStat;
  try {
    st = await vscode.workspace.fs.stat(uri);
  } catch {
    return false;
  }
  // A file there is refused by the backend whatever the answer: let it say so.
  if (st.type !== vscode.FileType.Directory) return false;
  const entries = await vscode.workspace.fs.readDirectory(uri);
  if (entries.length === 0) return false;
  const rel = vscode.workspace.asRelativePath(out);
  // Cancel first and the close affordance: it is the dialog's default button, so Enter never
  // overwrites the user's files; Replace must be chosen.
  const cancel: vscode.MessageItem = { title: 'Cancel', isCloseAffordance: true };
  const replace: vscode.MessageItem = { title: 'Replace' };
  const pick = await vscode.window.showWarningMessage(
    `${rel} already exists and holds ${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}.`,
    {
      modal: true,
      detail: `Replace the files this export writes (${exportWrites(f.format)})? Every other file in the folder is kept.`,
    },
    cancel,
    replace,
  );
  return pick === replace ? true : undefined;
}
