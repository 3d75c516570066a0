// After a window reload VS Code brings back the dashboard, experience browser and report tabs that
// were open (issue 40 item 8): each view type has a serializer (and an `onWebviewPanel:` activation
// event in package.json) that rebuilds the panel with the run or buffer it showed, from the state the
// webview saved (setState) or, for the script-less report, the run remembered for its tab title.
import * as vscode from 'vscode';
import type { Services } from '../services.js';
import type { BrowserState } from '../../webview/experience-browser/protocol.js';
import type { DashboardState } from '../../webview/dashboard/protocol.js';
import { openDashboard } from './dashboard.js';
import { openExperienceBrowser } from './experience-browser.js';
import { openReport, REPORT_RUNS } from '../commands/report.js';

export function registerRestore(s: Services): vscode.Disposable[] {
  const reg = (viewType: string, restore: (panel: vscode.WebviewPanel, state: unknown) => Promise<unknown>) =>
    vscode.window.registerWebviewPanelSerializer(viewType, {
      async deserializeWebviewPanel(panel, state) {
        try {
          await restore(panel, state);
        } catch (e) {
          s.output.warn(`could not restore ${viewType}: ${String(e)}`);
          panel.dispose();
        }
      },
    });
  return [
    reg('rftStudio.dashboard', async (panel, state) => {
      await openDashboard(s, (state as DashboardState | undefined)?.runId, panel);
    }),
    reg('rftStudio.experienceBrowser', async (panel, state) => {
      // The buffer it showed, unless one is open already (the webview keeps its own filter and selection).
      const path = (state as BrowserState | undefined)?.bufferPath;
      if (path && !s.state.bufferPath) await s.state.openBuffer({ path }).catch(() => undefined);
      await openExperienceBrowser(s, {}, panel);
    }),
    reg('rftStudio.report', async (panel) => {
      const runId = s.context.workspaceState.get<Record<string, string>>(REPORT_RUNS)?.[panel.title];
      if (!runId) throw new Error(`no run is known for the tab '${panel.title}'`);
      if (!(await openReport(s, runId, panel))) panel.dispose();
    }),
  ];
}
