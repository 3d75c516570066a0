// Status bar item: backend state, or the active run's progress; click opens the dashboard.
import * as vscode from 'vscode';
import type { BackendState } from './backend/client.js';
import type { StudioState } from './state.js';

export function statusText(backend: BackendState, s: Pick<StudioState, 'activeRun' | 'counts'>): { text: string; tooltip: string } {
  if (backend === 'failed') return { text: '$(error) RFT', tooltip: 'RFT Studio backend stopped after repeated crashes: click to show the log' };
  if (backend !== 'running') return { text: '$(loading~spin) RFT', tooltip: `RFT Studio backend ${backend}` };
  const run = s.activeRun;
  if (run) {
    const pct = run.step !== undefined && run.totalSteps ? ` ${Math.round((100 * run.step) / run.totalSteps)}%` : '';
    const reward = run.reward !== undefined ? ` r=${run.reward.toFixed(2)}` : '';
    return { text: `$(beaker) ${run.name ?? run.id}${pct}${reward}`, tooltip: `Run ${run.id}: ${run.status}` };
  }
  const c = s.counts;
  return { text: '$(beaker) RFT', tooltip: c ? `Buffer: ${c.usual} usual, ${c.expert} expert` : 'RFT Studio: no run' };
}

export class StatusBar implements vscode.Disposable {
  readonly item = vscode.window.createStatusBarItem('rftStudio.status', vscode.StatusBarAlignment.Left, 50);

  constructor(
    private readonly backendState: () => BackendState,
    private readonly state: StudioState,
  ) {
    this.item.name = 'RFT Studio';
    this.update();
    this.item.show();
  }

  update(): void {
    const b = this.backendState();
    const { text, tooltip } = statusText(b, this.state);
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.command = b === 'failed' ? 'rftStudio.showLog' : 'rftStudio.openDashboard';
  }

  dispose(): void {
    this.item.dispose();
  }
}
