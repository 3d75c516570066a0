// Before a run starts: the data files its config names (taskset, eval, experts) are validated the
// way the run reads them, and a file with errors stops the start with the count per file and the
// errors in Problems. The user may start anyway when every file keeps valid records (the run skips
// the bad ones, counted in its log); a file with none left would fail the run at step 0.
import * as vscode from 'vscode';
import type { Services } from '../services.js';
import { filesOf } from '../taskset-readings.js';

export interface DataErrors {
  file: string;
  section: string;
  errors: number;
  /** Valid records left. */
  tasks: number;
}

/** Validates each file the config names (shown in Problems); the files with errors. */
export async function dataFileErrors(s: Services, configPath: string, text: string): Promise<DataErrors[]> {
  const out: DataErrors[] = [];
  for (const f of filesOf(configPath, text)) {
    const r = await s.client.request('taskset/validate', { file: f.file, reading: { ...f.reading } });
    s.diagnostics.apply(r);
    const errors = r.issues.filter((i) => i.severity === 'error').length;
    if (errors) out.push({ file: f.file, section: f.section, errors, tasks: r.tasks });
  }
  return out;
}

/** True to start: the config's data files have no errors, or the user starts anyway (skipping them). */
export async function dataFilesClean(s: Services, uri: vscode.Uri): Promise<boolean> {
  // An unreadable config: the start says why (runs/start), not this check.
  const bytes = await vscode.workspace.fs.readFile(uri).then(undefined, () => undefined);
  if (!bytes) return true;
  const bad = await dataFileErrors(s, uri.fsPath, new TextDecoder().decode(bytes)).catch((e) => {
    s.output.warn(`data file check: ${String(e)}`);
    return [];
  });
  if (!bad.length) return true;
  const total = bad.reduce((a, b) => a + b.errors, 0);
  const rel = (f: string) => vscode.workspace.asRelativePath(f);
  const each = bad.map((b) => `${b.section} ${rel(b.file)}: ${b.errors}`).join(', ');
  const empty = bad.find((b) => b.tasks === 0);
  const why = empty
    ? `${rel(empty.file)} has no valid record left (a run would fail at its first step)`
    : 'or start anyway: the run skips those records';
  const head = `${rel(uri.fsPath)}: ${total} error${total === 1 ? '' : 's'} in its data files (${each}).`;
  s.output.error(`Start training: ${head}`);
  const SKIP = `Start Anyway (skip ${total})`;
  const pick = await vscode.window.showErrorMessage(
    `${head} The run was not started. Fix them (each is in Problems); ${why}.`,
    'Show Problems',
    ...(empty ? [] : [SKIP]),
  );
  if (pick === SKIP) {
    s.output.warn(`Start training: started anyway; ${total} bad record(s) are skipped (${each}).`);
    return true;
  }
  if (pick) await vscode.commands.executeCommand('workbench.actions.view.problems');
  return false;
}
