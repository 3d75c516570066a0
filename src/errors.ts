// Shows a backend error to the user: NotAvailable says what is missing, InvalidInput names the
// file / line / field, anything else shows the message and offers the log.
import * as vscode from 'vscode';
import { errorCode, INVALID_INPUT, NOT_AVAILABLE } from './backend/client.js';

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export async function showBackendError(action: string, err: unknown, output?: vscode.LogOutputChannel): Promise<void> {
  const code = errorCode(err);
  const msg = `${action}: ${errorMessage(err)}`;
  output?.warn(msg);
  if (code === NOT_AVAILABLE) {
    await vscode.window.showWarningMessage(msg);
  } else if (code === INVALID_INPUT) {
    await vscode.window.showErrorMessage(msg);
  } else {
    const pick = await vscode.window.showErrorMessage(msg, 'Show Log');
    if (pick) output?.show();
  }
}
