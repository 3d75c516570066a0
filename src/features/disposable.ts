// The backend client's subscriptions ({ dispose() }) as VS Code Disposables, so the feature files can
// push them to context.subscriptions like any other.
import type * as vscode from 'vscode';

export function toVs(d: { dispose(): void }): vscode.Disposable {
  return { dispose: () => d.dispose() };
}
