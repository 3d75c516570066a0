// Extension entry point: starts the backend, then registers each feature in order (src/features/:
// diagnostics, sidebar, run monitor, status bar, editor help, commands, startup, watchers) and the
// webviews. Everything talks to the backend through the typed JSON-RPC client.
import * as vscode from 'vscode';
import { createBackend } from './backend/manager.js';
import type { BackendClient } from './backend/client.js';
import type { Services } from './services.js';
import { StudioState } from './state.js';
import { registerRestore } from './webviews/restore.js';
import { openDashboard } from './webviews/dashboard.js';
import { openExperienceBrowser } from './webviews/experience-browser.js';
import { registerCommands } from './commands/register.js';
import { watchWorkspace } from './workspace-watchers.js';
import { registerConfigLanguage } from './features/config-language.js';
import { registerDocumentChecks } from './features/document-checks.js';
import { registerEngineSettingNotice } from './features/engine-setting.js';
import { registerRunMonitor } from './features/run-monitor.js';
import { registerSidebar } from './features/sidebar.js';
import { registerStartup } from './features/startup.js';
import { registerStatusBar } from './features/status.js';
import { createTasksetChecks, registerTasksetReports } from './features/taskset-checks.js';
import { registerTasksetLanguage } from './features/taskset-language.js';

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
  client = await createBackend({ extensionPath: context.extensionPath, version, output, onDawnLine: (l) => onDawn(l) });
  if (!client) return { services: undefined, activatedInMs: Date.now() - t0 };
  const c = client;
  const state = new StudioState(c);
  onDawn = (l) => state.dawnLine(l);

  // The order is the order of registration (and of disposal): each feature's file says what it adds.
  registerEngineSettingNotice(context);
  const checks = createTasksetChecks(c);
  const { readings, tasksets, diagnostics, configs } = checks;
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
  const views = registerSidebar(context, { client: c, state, checks });
  const monitor = registerRunMonitor(context, { client: c, output, state, services, configs });
  registerConfigLanguage(context);
  registerStatusBar(context, { client: c, state, diagnostics, views });
  registerTasksetReports(context, c, checks);
  const lens = registerTasksetLanguage(context, { client: c, state, readings });
  // Every command, guarded: a failure not shown by the command itself is told where the user acted.
  registerCommands(services);
  registerDocumentChecks(context, checks);
  registerStartup(context, { client: c, output, state, checks, monitor, lens });
  // Configs, taskset files and the run registry changed on disk (a config may map files differently).
  services.rereadConfigs = watchWorkspace({ context, output, state, ...checks });

  // Start the backend without blocking activation; errors were already shown by the client.
  void c.start().catch((e) => output.error(`backend did not start: ${String(e)}`));
  return { services, activatedInMs: Date.now() - t0 };
}

export async function deactivate(): Promise<void> {
  await client?.dispose();
  client = undefined;
}
