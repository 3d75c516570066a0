// Before a run starts: the data files its config names (taskset, eval, experts) are validated the
// way the run reads them, and a file with errors stops the start (a run would skip those records,
// or fail at step 0 when none is left): the count per file, and the errors in Problems.
import * as vscode from 'vscode';
import type { Services } from '../services.js';
import { filesOf } from '../taskset-readings.js';

export interface DataErrors {
  file: string;
  section: string;
  errors: number;
}

/** Validates each file the config names (shown in Problems); the files with errors. */
export async function dataFileErrors(s: Services, configPath: string, text: string): Promise<DataErrors[]> {
  const out: DataErrors[] = [];
  for (const f of filesOf(configPath, text)) {
    const r = await s.client.request('taskset/validate', { file: f.file, reading: { ...f.reading } });
    s.diagnostics.apply(r);
    const errors = r.issues.filter((i) => i.severity === 'error').length;
    if (errors) out.push({ file: f.file, section: f.section, errors });
  }
  return out;
}

/** True when the config's data files have no errors; else tells the user (count, files, Show Problems). */
export async function dataFilesClean(s: Services, uri: vscode.Uri): Promise<boolean> {
  const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
  const bad = await dataFileErrors(s, uri.fsPath, text).catch((e) => {
    s.output.warn(`data file check: ${String(e)}`);
    return [];
  });
  if (!bad.length) return true;
  const total = bad.reduce((a, b) => a + b.errors, 0);
  const each = bad.map((b) => `${b.section} ${vscode.workspace.asRelativePath(b.file)}: ${b.errors}`).join(', ');
  const rel = vscode.workspace.asRelativePath(uri);
  s.output.error(`Start training: ${rel}: ${total} error${total === 1 ? '' : 's'} in its data files (${each}).`);
  const pick = await vscode.window.showErrorMessage(
    `${rel}: ${total} error${total === 1 ? '' : 's'} in its data files (${each}). Fix them first (each is in Problems); the run was not started.`,
    'Show Problems',
  );
  if (pick) await vscode.commands.executeCommand('workbench.actions.view.problems');
  return false;
}
