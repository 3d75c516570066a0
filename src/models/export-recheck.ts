// Export Checkpoint… on a running run (issue 40 item 5): the run keeps only its newest checkpoints
// (and every 20th and each stage start), so the version picked may be deleted while the format and
// folder are chosen ("…/v46: field 'dir': no such folder"). Before each step that reads it, the
// checkpoint is looked for again; when it is gone, the user is told why and offered the run's newest.
import * as vscode from 'vscode';
import { existsSync } from 'node:fs';
import type { PickedCheckpoint } from '../commands/evaluate.js';
import type { Services } from '../services.js';

/** The checkpoint to go on with: the one picked while it exists, else the run's newest if the user agrees. */
export async function recheckCheckpoint(s: Services, ck: PickedCheckpoint): Promise<PickedCheckpoint | undefined> {
  if (existsSync(ck.path)) return ck;
  const what = ck.version !== undefined ? `v${ck.version} of ${ck.runName ?? ck.runId}` : ck.path;
  if (!ck.runId) {
    void vscode.window.showErrorMessage(`Export checkpoint: ${what} no longer exists (${ck.path}).`);
    return undefined;
  }
  await s.state.refreshRuns().catch(() => undefined);
  const run = s.state.runs.find((r) => r.id === ck.runId);
  const newest = [...(run?.checkpoints ?? [])].sort((a, b) => b.version - a.version).find((c) => existsSync(c.path));
  const why = `${what} was deleted by the run while you chose (a running run keeps only its newest checkpoints, every 20th and each stage start).`;
  if (!newest) {
    void vscode.window.showErrorMessage(`Export checkpoint: ${why} The run has no checkpoint left to export.`);
    return undefined;
  }
  const take = `Export v${newest.version}`;
  const pick = await vscode.window.showWarningMessage(
    why,
    {
      modal: true,
      detail: `Export the run's newest checkpoint instead, v${newest.version} (step ${newest.step ?? newest.version})? To keep a version, pick a multiple of 20, or export it when the run has ended.`,
    },
    take,
  );
  if (pick !== take) return undefined;
  return {
    path: newest.path,
    runId: ck.runId,
    runName: ck.runName,
    version: newest.version,
    step: newest.step ?? newest.version,
  };
}
