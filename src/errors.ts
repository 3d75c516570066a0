// Shows a failure to the user where they acted: one line saying what failed and why, the fix when
// one is known, and "Show Log" (the whole message, with any log lines, is in the RFT Studio log).
// The notification is not awaited, so a progress notification around the call ends at once.
import * as vscode from 'vscode';
import { errorCode, NOT_AVAILABLE } from './backend/client.js';
import { errorFix, oneLineReason, splitFix, toastLine } from './error-lines.js';

export { oneLineReason, errorFix, splitFix, toastLine } from './error-lines.js';

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** `Start training: field 'workflow.reward': unknown reward function 'mth' … Fix: use 'math_answer'.` */
export function errorLine(action: string, err: unknown): string {
  const msg = errorMessage(err);
  // A message with its own fix: what is wrong, short, and that fix (error-lines.ts toastLine).
  if (splitFix(msg).fix) return `${action}: ${toastLine(msg)}`;
  const fix = errorFix(msg);
  return `${action}: ${oneLineReason(msg)}${fix ? ` ${fix}` : ''}`;
}

export function showBackendError(action: string, err: unknown, output?: vscode.LogOutputChannel): Promise<void> {
  const full = `${action}: ${errorMessage(err)}`;
  const line = errorLine(action, err);
  output?.error(full);
  const show = errorCode(err) === NOT_AVAILABLE ? vscode.window.showWarningMessage : vscode.window.showErrorMessage;
  void Promise.resolve(show(line, 'Show Log')).then((pick) => pick === 'Show Log' && output?.show());
  return Promise.resolve();
}

/** A command that threw (anything not already shown): the same one-line notification. */
export function guardCommand<A extends unknown[]>(
  title: string,
  fn: (...args: A) => unknown,
  output: vscode.LogOutputChannel,
): (...args: A) => Promise<unknown> {
  return async (...args: A) => {
    try {
      return await fn(...args);
    } catch (err) {
      await showBackendError(title, err, output);
      return undefined;
    }
  };
}
