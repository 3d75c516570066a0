// Editor help in run configs (`*.rft.yaml`): the "did you mean" quick fixes of its Problems, and completion
// and hover from the generated config schema unless the YAML extension reads it (yamlValidation).
import * as vscode from 'vscode';
import { ConfigQuickFixes } from '../config-diagnostics.js';
import { ConfigSchemaProvider, yamlExtensionPresent } from '../config-schema-lang.js';

const CONFIG_SELECTOR: vscode.DocumentSelector = ['yaml', 'yml'].map((ext) => ({
  scheme: 'file',
  pattern: `**/*.rft.${ext}`,
}));

export function registerConfigLanguage(context: vscode.ExtensionContext): void {
  context.subscriptions.push(
    vscode.languages.registerCodeActionsProvider(CONFIG_SELECTOR, new ConfigQuickFixes(), {
      providedCodeActionKinds: ConfigQuickFixes.kinds,
    }),
  );
  if (!yamlExtensionPresent()) {
    const schema = new ConfigSchemaProvider();
    context.subscriptions.push(
      vscode.languages.registerCompletionItemProvider(CONFIG_SELECTOR, schema),
      vscode.languages.registerHoverProvider(CONFIG_SELECTOR, schema),
    );
  }
}
