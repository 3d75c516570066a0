// Open Run Report: the run's HTML report (learning curves and summary, written when the run ends)
// in an editor tab. The report has no scripts; it is shown with scripts off and a CSP allowing its
// inline styles only.
import * as vscode from 'vscode';
import { readFile } from 'node:fs/promises';
import type { Services } from '../services.js';
import { runFromArg } from './run-from-arg.js';

const CSP = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`;

/** The report's HTML with the CSP put first in its head. */
export function reportHtml(html: string): string {
  return /<head>/i.test(html) ? html.replace(/<head>/i, `<head>${CSP}`) : `${CSP}${html}`;
}

/** The run a report tab shows, by the tab's title: a window reload restores the tab from it (REPORT_RUNS). */
export const REPORT_RUNS = 'rftStudio.reportRuns';

export async function openReport(
  s: Services,
  arg?: unknown,
  restored?: vscode.WebviewPanel,
): Promise<vscode.WebviewPanel | undefined> {
  await s.state.refreshRuns().catch((e) => s.output.warn(`runs: ${String(e)}`));
  const run = await runFromArg(
    s.state.runs,
    arg,
    s.state.runs.filter((r) => r.reportPath),
    {
      title: 'Open run report',
      none: () =>
        void vscode.window.showWarningMessage(
          'No run has a report yet: a run writes report.html when it ends (stopped, paused or completed).',
        ),
    },
  );
  if (!run) return undefined;
  if (!run.reportPath) {
    void vscode.window.showWarningMessage(
      `Run ${run.name ?? run.id} has no report yet: it is written when the run ends (stopped, paused or completed).`,
    );
    return undefined;
  }
  const html = await readFile(run.reportPath, 'utf8');
  const title = `Report: ${run.name ?? run.id}`;
  const panel =
    restored ??
    vscode.window.createWebviewPanel('rftStudio.report', title, vscode.ViewColumn.Active, { enableScripts: false });
  panel.webview.options = { enableScripts: false };
  panel.webview.html = reportHtml(html);
  const runs = s.context.workspaceState.get<Record<string, string>>(REPORT_RUNS) ?? {};
  await s.context.workspaceState.update(REPORT_RUNS, { ...runs, [panel.title]: run.id });
  return panel;
}
