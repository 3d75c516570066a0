// The rftStudio.engine setting is the backend's RFT_BACKEND: it applies when the backend (re)starts,
// so a change says so and offers Restart Backend.
import * as vscode from 'vscode';

export function registerEngineSettingNotice(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('rftStudio.engine')) return;
      const RESTART = 'Restart Backend';
      void vscode.window
        .showInformationMessage(
          `rftStudio.engine is now '${vscode.workspace.getConfiguration('rftStudio').get<string>('engine') ?? 'auto'}': it applies to runs started after the backend restarts.`,
          RESTART,
        )
        .then((p) => p === RESTART && vscode.commands.executeCommand('rftStudio.restartBackend'));
    }),
  );
}
