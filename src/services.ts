// What commands, views and webviews share; built once in activate().
import type * as vscode from 'vscode';
import type { BackendClient } from './backend/client.js';
import type { TasksetDiagnostics } from './diagnostics.js';
import type { ConfigDiagnostics } from './config-diagnostics.js';
import type { StudioState } from './state.js';
import type { TasksetsTree } from './views/tasksets-tree.js';

export interface Services {
  context: vscode.ExtensionContext;
  client: BackendClient;
  state: StudioState;
  output: vscode.LogOutputChannel;
  diagnostics: TasksetDiagnostics;
  /** Run configs (`*.rft.yaml`) in Problems; also checked before a run starts. */
  configs: ConfigDiagnostics;
  tasksets: TasksetsTree;
  openExperienceBrowser(opts?: { source?: 'usual' | 'expert'; taskId?: string }): Promise<void>;
  openDashboard(runId?: string): Promise<void>;
  /** Re-reads the workspace's run configs and validates the files they map again (after a mapping is written). */
  rereadConfigs?(): Promise<void>;
}
