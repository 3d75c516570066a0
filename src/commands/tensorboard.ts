// Open in TensorBoard: a run's event files (monitor.tensorboard) in VS Code's TensorBoard integration
// where it is installed (the Python extension's `python.launchTensorBoard`, which asks for the folder
// itself: the path goes to the clipboard for its "Select another folder"), else a terminal running
// `tensorboard --logdir`, or the path to copy.
import * as vscode from 'vscode';
import type { Services } from '../services.js';
import { runFromArg } from './run-from-arg.js';

export const TENSORBOARD_COMMAND = 'python.launchTensorBoard';

/** `tensorboard --logdir 'DIR'`, quoted for POSIX shells and PowerShell alike (a ' inside doubled or escaped). */
export function tensorboardCommandLine(dir: string, windows = process.platform === 'win32'): string {
  const q = windows ? `'${dir.replace(/'/g, "''")}'` : `'${dir.replace(/'/g, `'\\''`)}'`;
  return `tensorboard --logdir ${q}`;
}

export async function openTensorBoard(s: Services, arg?: unknown): Promise<void> {
  await s.state.refreshRuns().catch((e) => s.output.warn(`runs: ${String(e)}`));
  const run = await runFromArg(
    s.state.runs,
    arg,
    s.state.runs.filter((r) => r.tensorboardDir),
    {
      title: 'Open in TensorBoard',
      none: () =>
        void vscode.window.showWarningMessage(
          'No run has TensorBoard event files yet: a run writes them as it trains (monitor.tensorboard, on by default).',
        ),
    },
  );
  if (!run) return;
  const dir = run.tensorboardDir;
  if (!dir) {
    void vscode.window.showWarningMessage(
      `Run ${run.name ?? run.id} has no TensorBoard event files (monitor.tensorboard: false, or it has not trained yet).`,
    );
    return;
  }
  if ((await vscode.commands.getCommands(true)).includes(TENSORBOARD_COMMAND)) {
    await vscode.env.clipboard.writeText(dir);
    void vscode.window.showInformationMessage(
      `TensorBoard: choose "Select another folder…" and paste the run's folder (copied): ${dir}`,
    );
    await vscode.commands.executeCommand(TENSORBOARD_COMMAND);
    return;
  }
  const choice = await vscode.window.showInformationMessage(
    `TensorBoard event files of ${run.name ?? run.id}: ${dir}. VS Code's TensorBoard integration (the Python extension) is not installed.`,
    'Run tensorboard in a Terminal',
    'Copy Path',
  );
  if (choice === 'Copy Path') await vscode.env.clipboard.writeText(dir);
  else if (choice === 'Run tensorboard in a Terminal') {
    const term = vscode.window.createTerminal({ name: `TensorBoard: ${run.name ?? run.id}` });
    term.show();
    term.sendText(tensorboardCommandLine(dir));
  }
}
