// Train Reward Model…: `rft reward-model train` on the ratings and preference pairs curated in a
// run's buffer (the backend runs it as a child process: `rewardModel/train`), with its progress in a
// notification, the held-out pairwise accuracy at the end, and an offer to use the model as a
// config's reward (`workflow.reward: reward_model:<dir>`).
import * as vscode from 'vscode';
import { isAbsolute, join } from 'node:path';
import { parseDocument } from 'yaml';
import type { RewardModelReport, RunInfo } from '../../backend/core/protocol.js';
import { showBackendError } from '../errors.js';
import type { Services } from '../services.js';
import { runFacts } from './run-picks.js';

type RunItem = vscode.QuickPickItem & { run: RunInfo };

/** The sentence the user reads at the end (also in the log). */
export function rewardModelResult(runName: string, r: RewardModelReport, where: string): string {
  const acc =
    r.heldout_accuracy === null
      ? 'no held-out pairs (fewer than two tasks have pairs), so no held-out accuracy'
      : `held-out pairwise accuracy ${(r.heldout_accuracy * 100).toFixed(1)}% ± ${((r.heldout_stderr ?? 0) * 100).toFixed(1)} on ${r.heldout_pairs} pair${r.heldout_pairs === 1 ? '' : 's'} of ${r.heldout_tasks} unseen task${r.heldout_tasks === 1 ? '' : 's'}` +
        // The baselines on the same pairs: what the accuracy has to beat to mean anything.
        (r.baselines.length
          ? ` (baseline${r.baselines.length > 1 ? 's' : ''}: ${r.baselines.map((b) => `${b.name} ${(b.heldout_accuracy * 100).toFixed(1)}%`).join(', ')})`
          : '');
  return `Reward model of ${runName}: ${acc} (trained on ${r.train_pairs} pair${r.train_pairs === 1 ? '' : 's'} and ${r.train_ratings} rating${r.train_ratings === 1 ? '' : 's'}); saved in ${where}`;
}

/** Sets `workflow.reward: reward_model:<dir>` in a workspace run config the user picks, keeping its comments. */
export async function useRewardModel(dir: string): Promise<vscode.Uri | undefined> {
  const files = await vscode.workspace.findFiles('**/*.rft.{yaml,yml}', '**/node_modules/**', 200);
  if (files.length === 0) {
    await vscode.window.showWarningMessage(
      `No run config (*.rft.yaml) in the workspace: set workflow.reward to reward_model:${dir} in yours.`,
    );
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    files.map((uri) => ({ label: vscode.workspace.asRelativePath(uri), uri })),
    {
      title: 'Use the reward model in: config',
      placeHolder: `sets workflow.reward: reward_model:${dir}`,
      ignoreFocusOut: true,
    },
  );
  if (!pick) return undefined;
  const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(pick.uri));
  const doc = parseDocument(text);
  if (doc.errors.length) {
    await vscode.window.showErrorMessage(
      `${pick.label}: not valid YAML (${doc.errors[0]!.message.split('\n')[0]}); nothing changed`,
    );
    return undefined;
  }
  doc.setIn(['workflow', 'reward'], `reward_model:${dir}`);
  await vscode.workspace.fs.writeFile(pick.uri, new TextEncoder().encode(doc.toString()));
  await vscode.window.showTextDocument(pick.uri);
  return pick.uri;
}

/** Train Reward Model…: pick a run (or given its id), an output folder, train, report, offer to use it. */
export async function trainRewardModel(s: Services, arg?: unknown): Promise<RewardModelReport | undefined> {
  await s.state.refreshRuns().catch(() => undefined);
  const runs = [...s.state.runs].filter((r) => r.bufferPath).sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0));
  let run = typeof arg === 'string' ? runs.find((r) => r.id === arg) : undefined;
  if (!run) {
    if (runs.length === 0) {
      await vscode.window.showInformationMessage(
        'No run yet: a reward model learns from the ratings and the promoted / rejected responses of a run\u2019s buffer.',
      );
      return undefined;
    }
    const pick = await vscode.window.showQuickPick<RunItem>(
      runs.map((r) => ({
        label: r.name ?? r.id,
        description: runFacts(r),
        detail: r.id,
        run: r,
      })),
      {
        title: 'Train reward model: run',
        placeHolder: 'The run whose curated ratings and pairs it learns from',
        ignoreFocusOut: true,
      },
    );
    run = pick?.run;
  }
  if (!run) return undefined;
  const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const given = await vscode.window.showInputBox({
    title: 'Train reward model: output folder (inside the workspace)',
    value: join('.rft', 'reward-models', run.id),
    ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? undefined : 'a folder is required'),
  });
  if (!given?.trim()) return undefined;
  const out = isAbsolute(given) || !root ? given.trim() : join(root, given.trim());
  const name = run.name ?? run.id;
  const runId = run.id;
  const report = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Training a reward model on ${name}`, cancellable: true },
    async (progress, token) => {
      let done = 0;
      const sub = s.client.onNotification('rewardModel/progress', (p) => {
        if (p.runId !== runId) return;
        s.output.info(`reward model (${runId}): ${p.line}`);
        const pct = p.step !== undefined && p.steps ? (100 * p.step) / p.steps : undefined;
        progress.report({ message: p.line, ...(pct !== undefined ? { increment: pct - done } : {}) });
        if (pct !== undefined) done = pct;
      });
      try {
        const req = s.client.request('rewardModel/train', { runId, out });
        return await Promise.race([req, new Promise<null>((res) => token.onCancellationRequested(() => res(null)))]);
      } catch (err) {
        await showBackendError('Train reward model', err, s.output);
        return null;
      } finally {
        sub.dispose();
      }
    },
  );
  if (!report) return undefined;
  const where = vscode.workspace.asRelativePath(report.out);
  const line = rewardModelResult(name, report, where);
  s.output.info(line);
  const use = await vscode.window.showInformationMessage(`${line}.`, 'Use in a Config…');
  if (use) await useRewardModel(report.out);
  return report;
}
