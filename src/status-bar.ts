// Status bar item: backend state, or the active run's progress; click opens the dashboard.
import * as vscode from 'vscode';
import type { BackendState } from './backend/client.js';
import type { StudioState } from './state.js';
import type { EngineSummary } from '../backend/core/protocol.js';
import { dawnReasons } from '../backend/core/dawn-lines.js';

export function statusText(
  backend: BackendState,
  s: Pick<StudioState, 'activeRun' | 'counts'> & { engine?: EngineSummary; dawnSaid?: readonly string[] },
): { text: string; tooltip: string } {
  if (backend === 'failed')
    return {
      text: '$(error) RFT',
      tooltip: 'RFT Studio backend stopped after repeated crashes: click to show the log',
    };
  if (backend !== 'running') return { text: '$(loading~spin) RFT', tooltip: `RFT Studio backend ${backend}` };
  const { text, tooltip } = runOrBuffer(s);
  const e = s.engine;
  if (!e) return { text, tooltip };
  // The GPU is named where it is used (or cannot be): the CPU engine is the quiet default.
  const mark =
    e.engine === 'webgpu' ? (e.ok ? (e.fallback ? ' · GPU (emulated)' : ' · GPU') : ' · $(warning) no GPU') : '';
  // No GPU: Dawn's own words (e.g. the driver it refused and why) are the reason, where it said any.
  const dawn = !e.ok || (e.engine === 'cpu' && /no GPU/.test(e.detail)) ? dawnReasons(s.dawnSaid ?? []) : [];
  return {
    text: text + mark,
    tooltip: `${tooltip}\nEngine: ${e.engine}${e.requested !== 'auto' ? ` (rftStudio.engine / RFT_BACKEND: ${e.requested})` : ''} - ${e.detail}${dawn.length ? `\nDawn: ${dawn.join('; ')}` : ''}`,
  };
}

function runOrBuffer(s: Pick<StudioState, 'activeRun' | 'counts'>): { text: string; tooltip: string } {
  const run = s.activeRun;
  if (run) {
    // Step and progress, not a bare "r=0.13": what the number is and how far the run has come.
    const name = run.name ?? run.id;
    const steps =
      run.step !== undefined ? (run.totalSteps ? `${run.step}/${run.totalSteps} steps` : `step ${run.step}`) : '';
    const pct = run.step !== undefined && run.totalSteps ? Math.round((100 * run.step) / run.totalSteps) : undefined;
    const reward = run.reward !== undefined ? `reward ${run.reward.toFixed(2)}` : '';
    const icon = run.status === 'running' ? '$(sync~spin)' : '$(debug-pause)';
    const text = [`${icon} ${name}`, steps, reward].filter(Boolean).join(' · ');
    const tooltip = `Run ${name}${name !== run.id ? ` (${run.id})` : ''}: ${run.status}${run.step !== undefined ? `, step ${run.step}${run.totalSteps ? ` of ${run.totalSteps} (${pct}%)` : ''}` : ''}${run.reward !== undefined ? `, mean rollout reward ${run.reward.toFixed(3)}` : ''}. Click to open the dashboard.`;
    return { text, tooltip };
  }
  const c = s.counts;
  return {
    text: '$(beaker) RFT',
    tooltip: c
      ? `Buffer: ${c.usual.toLocaleString('en-US')} usual, ${c.expert.toLocaleString('en-US')} expert`
      : 'RFT Studio: no run',
  };
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
