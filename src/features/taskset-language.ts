// Editor help in taskset files: the pass rate of each task in the current run above its line
// (a code lens), and quick fixes for the taskset Problems.
import * as vscode from 'vscode';
import type { BackendClient } from '../backend/client.js';
import type { StudioState } from '../state.js';
import { TaskPassRateLens } from '../taskset-lens.js';
import { TasksetQuickFixes } from '../taskset-fixes.js';
import type { TasksetReadings } from '../taskset-readings.js';

const TASKSET_SELECTOR: vscode.DocumentSelector = ['jsonl', 'json', 'yaml', 'yml', 'csv'].map((ext) => ({
  scheme: 'file',
  pattern: `**/*.${ext}`,
}));

export interface TasksetLanguageDeps {
  client: BackendClient;
  state: StudioState;
  readings: Pick<TasksetReadings, 'isTaskset'>;
}

/** Returns the lens (startup refreshes it once the runs are read). */
export function registerTasksetLanguage(context: vscode.ExtensionContext, d: TasksetLanguageDeps): TaskPassRateLens {
  const lens = new TaskPassRateLens(d.client, d.state, undefined, (f) => d.readings.isTaskset(f));
  context.subscriptions.push(lens, vscode.languages.registerCodeLensProvider(TASKSET_SELECTOR, lens));
  context.subscriptions.push(
    vscode.languages.registerCodeActionsProvider(TASKSET_SELECTOR, new TasksetQuickFixes(), {
      providedCodeActionKinds: TasksetQuickFixes.kinds,
    }),
  );
  return lens;
}
