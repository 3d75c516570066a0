// Extension entry point: starts the backend, registers commands, sidebar views, diagnostics, the
// status bar and webviews. Everything talks to the backend through the typed JSON-RPC client.
import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { createBackend } from './backend/manager.js';
import type { BackendClient } from './backend/client.js';
import { TasksetDiagnostics, looksLikeTaskset } from './diagnostics.js';
import { ConfigDiagnostics, ConfigQuickFixes, isRunConfig } from './config-diagnostics.js';
import { ConfigSchemaProvider, yamlExtensionPresent } from './config-schema-lang.js';
import { RunMonitor } from './run-events.js';
import { TaskPassRateLens, currentRun } from './taskset-lens.js';
import { TasksetQuickFixes } from './taskset-fixes.js';
import { TasksetReadings } from './taskset-readings.js';
import type { Services } from './services.js';
import { StudioState } from './state.js';
import { StatusBar } from './status-bar.js';
import { registerRestore } from './webviews/restore.js';
import { BufferTree } from './views/buffer-tree.js';
import { RunsTree } from './views/runs-tree.js';
import { TasksetsTree } from './views/tasksets-tree.js';
import { openDashboard } from './webviews/dashboard.js';
import { openExperienceBrowser } from './webviews/experience-browser.js';
import { registerCommands } from './commands/register.js';
import { registerWorkersView } from './views/workers-view.js';
import { watchWorkspace } from './workspace-watchers.js';

let client: BackendClient | undefined;

/** Returned from activate(): used by the tests and the activation benchmark. */
export interface StudioApi {
  services: Services | undefined;
  activatedInMs: number;
}

export async function activate(context: vscode.ExtensionContext): Promise<StudioApi> {
  const t0 = Date.now();
  const output = vscode.window.createOutputChannel('RFT Studio', { log: true });
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand('rftStudio.showLog', () => output.show()),
  );
  const version = String((context.extension?.packageJSON as { version?: string } | undefined)?.version ?? '0.0.0');
  // Dawn's lines reach the state once it exists (the backend starts after it is made).
  let onDawn: (line: string) => void = () => undefined;
  client = await createBackend({
    extensionPath: context.extensionPath,
    version,
    output,
    onDawnLine: (l) => onDawn(l),
  });
  if (!client) return { services: undefined, activatedInMs: Date.now() - t0 };
  const c = client;

  const state = new StudioState(c);
  onDawn = (l) => state.dawnLine(l);
  // rftStudio.engine is the backend's RFT_BACKEND: it applies when the backend (re)starts, so say so and offer it.
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('rftStudio.engine')) return;
      const RESTART = 'Restart Backend';
      void vscode.window
        .showInformationMessage(
          `rftStudio.engine is now '${vscode.workspace.getConfiguration('rftStudio').get<string>('engine') ?? 'auto'}': it applies to runs started after the backend restarts.`,
          RESTART,
        )
        .then((p) => p === RESTART && vscode.commands.executeCommand('rftStudio.restartBackend'));
    }),
  );
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
  const updateBadge = () => (tasksetsView.badge = badge(diagnostics.errorCount()));
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
  const services: Services = {
    context,
    client: c,
    state,
    output,
    diagnostics,
    configs,
    tasksets,
    openExperienceBrowser: async (o) => void (await openExperienceBrowser(services, o)),
    openDashboard: async (id) => void (await openDashboard(services, id)),
  };
  // Dashboard, browser and report tabs come back with their run after a window reload.
  context.subscriptions.push(...registerRestore(services));

  const runsView = vscode.window.createTreeView('rftStudio.runs', { treeDataProvider: new RunsTree(state) });
  const bufferView = vscode.window.createTreeView('rftStudio.buffer', { treeDataProvider: new BufferTree(state) });
  const tasksetsView = vscode.window.createTreeView('rftStudio.tasksets', { treeDataProvider: tasksets });
  // Workers of a distributed run (scale-out over PostgreSQL), polled while one is configured.
  registerWorkersView(context, c);
  // The run's life in the output channel; failures and completions as notifications with actions.
  const monitor = new RunMonitor({ client: c, output, openDashboard: (id) => services.openDashboard(id) });
  context.subscriptions.push(
    monitor,
    configs,
    state.onDidChange((what) => what === 'runs' && monitor.follow(state.runs)),
  );
  context.subscriptions.push(
    vscode.languages.registerCodeActionsProvider(CONFIG_SELECTOR, new ConfigQuickFixes(), {
      providedCodeActionKinds: ConfigQuickFixes.kinds,
    }),
  );
  // Completion and hover from the generated config schema, unless the YAML extension reads it (yamlValidation).
  if (!yamlExtensionPresent()) {
    const schema = new ConfigSchemaProvider();
    context.subscriptions.push(
      vscode.languages.registerCompletionItemProvider(CONFIG_SELECTOR, schema),
      vscode.languages.registerHoverProvider(CONFIG_SELECTOR, schema),
    );
  }
  const status = new StatusBar(() => c.state, state);
  context.subscriptions.push(state, diagnostics, status, runsView, bufferView, tasksetsView);
  context.subscriptions.push(
    state.onDidChange(() => status.update()),
    toVs(c.onState(() => status.update())),
  );
  // The watcher's reports read files plainly: a file a config maps is validated again as the run reads it.
  context.subscriptions.push(
    toVs(
      c.onNotification('taskset/report', (r) =>
        readings.readingFor(r.file)
          ? void validate(r.file).then(
              (x) => diagnostics.apply(x),
              () => diagnostics.apply(r),
            )
          : diagnostics.apply(r),
      ),
    ),
  );

  // Pass rate of each task in the current run, above its line in taskset files.
  const lens = new TaskPassRateLens(c, state, undefined, (f) => readings.isTaskset(f));
  context.subscriptions.push(lens, vscode.languages.registerCodeLensProvider(TASKSET_SELECTOR, lens));
  context.subscriptions.push(
    vscode.languages.registerCodeActionsProvider(TASKSET_SELECTOR, new TasksetQuickFixes(), {
      providedCodeActionKinds: TasksetQuickFixes.kinds,
    }),
  );

  // Every command, guarded: a failure not shown by the command itself is told where the user acted.
  registerCommands(services);

  // Tasksets: validate open documents while typing / on save; the backend watches files on disk.
  context.subscriptions.push(
    // A config opened or saved is checked deep (registry names, as `rft run` would refuse them).
    vscode.workspace.onDidOpenTextDocument((d) =>
      isRunConfig(d.uri.fsPath) ? void configs.check(d, true).catch(() => undefined) : diagnostics.schedule(d),
    ),
    vscode.workspace.onDidChangeTextDocument((e) =>
      isRunConfig(e.document.uri.fsPath) ? configs.schedule(e.document) : diagnostics.schedule(e.document),
    ),
    vscode.workspace.onDidSaveTextDocument(
      (d) => void (isRunConfig(d.uri.fsPath) ? configs.check(d, true) : diagnostics.check(d)).catch(() => undefined),
    ),
    // Closed with unsaved edits dropped: Problems shows the file on disk again (a file gone: nothing).
    vscode.workspace.onDidCloseTextDocument(
      (d) =>
        d.uri.scheme === 'file' &&
        void (existsSync(d.uri.fsPath)
          ? diagnostics.check({ uri: d.uri, getText: () => '', isDirty: false }).catch(() => undefined)
          : forgetFile(d.uri)),
    ),
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
  const startup = async () => {
    // The runs first (the status bar names a running run at once, not after every taskset is checked).
    const runsRead = c.capabilities?.runs
      ? state.refreshRuns().catch((e) => output.warn(`runs: ${String(e)}`))
      : Promise.resolve();
    await readings.refresh();
    const files = await rescan();
    for (const d of vscode.workspace.textDocuments) {
      if (isRunConfig(d.uri.fsPath)) await configs.check(d, true).catch(() => undefined);
      else await diagnostics.check(d);
    }
    // Taskset files outside tasksets/ (found by their content or named by a config) are not opened yet: check them too.
    for (const f of files)
      if (!looksLikeTaskset(f.fsPath) && !vscode.workspace.textDocuments.some((d) => d.uri.fsPath === f.fsPath))
        diagnostics.apply(await validate(f.fsPath));
    await runsRead;
    // Runs that existed before this window are history, not news.
    monitor.know(state.runs);
    const bp = vscode.workspace.getConfiguration('rftStudio').get<string>('bufferPath')?.trim();
    const root = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (bp && !state.bufferPath)
      await state.openBuffer({ path: root && !isAbsolute(bp) ? vscode.Uri.joinPath(root, bp).fsPath : bp });
    // No buffer set: follow the current run's.
    const run = currentRun(state.runs);
    if (!state.bufferPath && run) await state.openBuffer({ runId: run.id });
    await lens.refresh();
  };
  context.subscriptions.push(
    toVs(c.onStarted(() => void startup().catch((e) => output.warn(`startup: ${String(e)}`)))),
  );
  // Configs, taskset files and the run registry changed on disk (a config may map files differently).
  services.rereadConfigs = watchWorkspace({
    context,
    output,
    state,
    readings,
    tasksets,
    diagnostics,
    configs,
    validate,
    rescan,
    forgetFile,
  });

  // Start the backend without blocking activation; errors were already shown by the client.
  void c.start().catch((e) => output.error(`backend did not start: ${String(e)}`));
  return { services, activatedInMs: Date.now() - t0 };
}

const CONFIG_SELECTOR: vscode.DocumentSelector = ['yaml', 'yml'].map((ext) => ({
  scheme: 'file',
  pattern: `**/*.rft.${ext}`,
}));
const TASKSET_SELECTOR: vscode.DocumentSelector = ['jsonl', 'json', 'yaml', 'yml', 'csv'].map((ext) => ({
  scheme: 'file',
  pattern: `**/*.${ext}`,
}));

function badge(errors: number): vscode.ViewBadge | undefined {
  return errors ? { value: errors, tooltip: `${errors} taskset error${errors === 1 ? '' : 's'}` } : undefined;
}

function toVs(d: { dispose(): void }): vscode.Disposable {
  return { dispose: () => d.dispose() };
}

export async function deactivate(): Promise<void> {
  await client?.dispose();
  client = undefined;
}
