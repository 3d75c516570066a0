// What changes on disk outside the editor, followed from activate(): run configs (a mapping written or
// changed: the files they name are validated again), taskset files created or deleted (Problems, the
// Tasksets view and its badge follow at once), and the run registry other processes write.
import * as vscode from 'vscode';
import { existsSync, statSync } from 'node:fs';
import type { TasksetReport } from '../backend/core/protocol.js';
import { DebouncedChecker } from './debounced-checker.js';
import type { TasksetDiagnostics } from './diagnostics.js';
import type { ConfigDiagnostics } from './config-diagnostics.js';
import type { StudioState } from './state.js';
import type { TasksetReadings } from './taskset-readings.js';
import type { TasksetsTree } from './views/tasksets-tree.js';

export interface WatchedWorkspace {
  context: vscode.ExtensionContext;
  output: vscode.LogOutputChannel;
  state: StudioState;
  readings: TasksetReadings;
  tasksets: TasksetsTree;
  diagnostics: TasksetDiagnostics;
  /** Run configs in Problems: a config naming a file that appears or goes is checked again. */
  configs: Pick<ConfigDiagnostics, 'checkFile'>;
  /** Validates a file as the run that maps it reads it. */
  validate(file: string): Promise<TasksetReport>;
  /** Lists the taskset files again and hands them to the backend's watcher. */
  rescan(): Promise<unknown>;
  /** A file gone: its Problems, report and badge count go. */
  forgetFile(uri: vscode.Uri): void;
}

/** Starts the watchers; returns the re-read of the run configs (Services.rereadConfigs). */
export function watchWorkspace(w: WatchedWorkspace): () => Promise<void> {
  const { context, readings, tasksets, diagnostics } = w;
  const configWatcher = vscode.workspace.createFileSystemWatcher('**/*.rft.{yaml,yml}');
  const rereadConfigsNow = async () => {
    const before = readings.files();
    await readings.refresh();
    const files = new Set(
      [...before, ...readings.files()].filter(
        // A dataset folder a config names (Open Dataset…) is no file of the Problems panel.
        (f) => existsSync(f) && statSync(f).isFile() && (tasksets.reports.has(f) || readings.isTaskset(f)),
      ),
    );
    for (const f of files) diagnostics.apply(await w.validate(f));
    await w.rescan();
  };
  const rereadConfigs = () => void rereadConfigsNow().catch((e) => w.output.warn(`taskset readings: ${String(e)}`));
  context.subscriptions.push(
    configWatcher,
    configWatcher.onDidCreate(rereadConfigs),
    configWatcher.onDidChange(rereadConfigs),
    configWatcher.onDidDelete(rereadConfigs),
  );
  const watcher = vscode.workspace.createFileSystemWatcher('**/*.{jsonl,json,yaml,yml,csv,parquet,arrow}');
  // A file moved or deleted: its Problems, report and badge count go at once (not when its tab closes).
  // The rescan waits for a burst to end (a run writing checkpoints creates many files), and files
  // the program writes (.rft/, node_modules/) do not trigger one.
  const rescans = new DebouncedChecker(500);
  const ours = (uri: vscode.Uri) => /[\\/](\.rft|node_modules|\.git)[\\/]/.test(uri.fsPath);
  const rescanSoon = (uri: vscode.Uri) => !ours(uri) && rescans.schedule('rescan', () => w.rescan());
  // A file a config names appeared or went (renamed, deleted, put back): the config's "no file"
  // problem follows at once, not when the config is next opened or started.
  const recheckConfigsNaming = (uri: vscode.Uri) => {
    for (const c of readings.configsNaming(uri.fsPath))
      void w.configs.checkFile(c, false).catch((e) => w.output.warn(`config check: ${String(e)}`));
  };
  context.subscriptions.push(
    watcher,
    rescans,
    watcher.onDidCreate((uri) => {
      recheckConfigsNaming(uri);
      rescanSoon(uri);
    }),
    watcher.onDidDelete((uri) => {
      w.forgetFile(uri);
      recheckConfigsNaming(uri);
      rescanSoon(uri);
    }),
  );
  // The run registry is a file other processes (the CLI, the coordinator) write: follow it.
  const runsWatcher = vscode.workspace.createFileSystemWatcher('**/.rft/runs.json');
  const refreshRuns = () => void w.state.refreshRuns().catch((e) => w.output.warn(`runs: ${String(e)}`));
  context.subscriptions.push(runsWatcher, runsWatcher.onDidChange(refreshRuns), runsWatcher.onDidCreate(refreshRuns));
  return rereadConfigsNow;
}
