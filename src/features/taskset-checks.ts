// The checks of taskset files and run configs that the views, commands and watchers share: how each
// file is read (a config's `format:` mapping, or one detected from its first records), the Tasksets
// tree and its error badge, Problems for tasksets and configs, and the backend's reports of files
// changed on disk. Built once in activate().
import type * as vscode from 'vscode';
import type { TasksetReport } from '../../backend/core/protocol.js';
import type { BackendClient } from '../backend/client.js';
import { ConfigDiagnostics } from '../config-diagnostics.js';
import { TasksetDiagnostics } from '../diagnostics.js';
import { TasksetReadings } from '../taskset-readings.js';
import { TasksetsTree } from '../views/tasksets-tree.js';
import { toVs } from './disposable.js';

export interface TasksetChecks {
  readings: TasksetReadings;
  tasksets: TasksetsTree;
  diagnostics: TasksetDiagnostics;
  /** Run configs (`*.rft.yaml`) in Problems. */
  configs: ConfigDiagnostics;
  /** Validates a file as the run that maps it reads it (or with the mapping detected from its records). */
  validate(file: string, text?: string): Promise<TasksetReport>;
  /** Lists the taskset files again and hands them to the backend's watcher. */
  rescan(): Promise<vscode.Uri[]>;
  /** A file gone: its Problems, report and badge count go. */
  forgetFile(uri: vscode.Uri): void;
  /** The view whose badge counts the taskset errors (the sidebar's Tasksets view). */
  badgeOn(view: { badge?: vscode.ViewBadge }): void;
}

export function createTasksetChecks(c: BackendClient): TasksetChecks {
  // A file a run config maps (`format:`) is validated the way the run reads it; a file no config
  // maps yet, with the mapping detected from its first records.
  const readings = new TasksetReadings();
  const tasksets = new TasksetsTree(
    () => readings.files(),
    (f) => readings.holdsTasks(f),
  );
  const validate = (file: string, text?: string) => {
    const reading = readings.readingFor(file, text);
    return c.request('taskset/validate', { file, text, ...(reading ? { reading } : {}) });
  };
  // The badge counts what Problems shows (not the reports of files gone or closed).
  let badgeView: { badge?: vscode.ViewBadge } | undefined;
  const updateBadge = () => badgeView && (badgeView.badge = badge(diagnostics.errorCount()));
  const diagnostics = new TasksetDiagnostics(
    validate,
    (r) => {
      tasksets.setReport(r);
      updateBadge();
    },
    300,
    { isTaskset: (f, t) => readings.isTaskset(f, t), note: (f) => readings.note(f) },
  );
  const configs = new ConfigDiagnostics((file, text, deep) =>
    c.request('config/validate', { file, text, ...(deep ? { deep } : {}) }),
  );
  const forgetFile = (uri: vscode.Uri) => {
    diagnostics.forget(uri);
    tasksets.forget(uri.fsPath);
    updateBadge();
  };
  // The backend watches the taskset files on disk (changes outside the editor).
  const rescan = async () => {
    const files = await tasksets.refresh();
    if (c.state === 'running' && c.capabilities?.taskset)
      await c.request('taskset/watch', { files: files.map((f) => f.fsPath) });
    return files;
  };
  const badgeOn = (view: { badge?: vscode.ViewBadge }) => void (badgeView = view);
  return { readings, tasksets, diagnostics, configs, validate, rescan, forgetFile, badgeOn };
}

/** The backend watcher's reports read files plainly: a file a config maps is validated again as the run reads it. */
export function registerTasksetReports(context: vscode.ExtensionContext, c: BackendClient, k: TasksetChecks): void {
  context.subscriptions.push(
    toVs(
      c.onNotification('taskset/report', (r) =>
        k.readings.readingFor(r.file)
          ? void k.validate(r.file).then(
              (x) => k.diagnostics.apply(x),
              () => k.diagnostics.apply(r),
            )
          : k.diagnostics.apply(r),
      ),
    ),
  );
}

function badge(errors: number): vscode.ViewBadge | undefined {
  return errors ? { value: errors, tooltip: `${errors} taskset error${errors === 1 ? '' : 's'}` } : undefined;
}
