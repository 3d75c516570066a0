// The run's life in the output channel, and failures and completions as notifications with actions
// (src/run-events.ts), following the runs the state lists.
import type * as vscode from 'vscode';
import type { BackendClient } from '../backend/client.js';
import type { ConfigDiagnostics } from '../config-diagnostics.js';
import { RunMonitor } from '../run-events.js';
import type { Services } from '../services.js';
import type { StudioState } from '../state.js';

export interface RunMonitorFeatureDeps {
  client: BackendClient;
  output: vscode.LogOutputChannel;
  state: StudioState;
  services: Pick<Services, 'openDashboard'>;
  /** Pushed with the monitor (the place activate() always disposed it). */
  configs: ConfigDiagnostics;
}

export function registerRunMonitor(context: vscode.ExtensionContext, d: RunMonitorFeatureDeps): RunMonitor {
  const { state, services } = d;
  const monitor = new RunMonitor({
    client: d.client,
    output: d.output,
    openDashboard: (id) => services.openDashboard(id),
  });
  context.subscriptions.push(
    monitor,
    d.configs,
    state.onDidChange((what) => what === 'runs' && monitor.follow(state.runs)),
  );
  return monitor;
}
