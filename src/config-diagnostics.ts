// Run configs (`*.rft.yaml`) in the Problems panel: each schema problem at the line of its key,
// validated on open, while typing (debounced, unsaved text) and on save, and before a run starts;
// an unknown key with a near known one gets a "did you mean" quick fix.
import * as vscode from 'vscode';
import type { ConfigIssueAt } from '../backend/core/protocol.js';
import { DebouncedChecker } from './debounced-checker.js';

export const CONFIG_FILE = /\.rft\.ya?ml$/;

export function isRunConfig(path: string): boolean {
  return CONFIG_FILE.test(path);
}

type Doc = {
  uri: vscode.Uri;
  getText(): string;
  isDirty?: boolean;
  lineCount?: number;
  lineAt?(n: number): { text: string };
};

export function configDiagnostic(i: ConfigIssueAt, doc?: Doc): vscode.Diagnostic {
  const line = Math.max(0, (i.line ?? 1) - 1);
  const text = doc?.lineAt && doc.lineCount !== undefined && line < doc.lineCount ? doc.lineAt(line).text : '';
  const start = Math.max(0, text.length - text.trimStart().length);
  const d = new vscode.Diagnostic(
    new vscode.Range(line, start, line, Math.max(text.length, start + 1)),
    `${i.field}: ${i.message}`,
    i.severity === 'warning' ? vscode.DiagnosticSeverity.Warning : vscode.DiagnosticSeverity.Error,
  );
  d.source = 'rft config';
  return d;
}

/** `unknown key 'lrr' (did you mean 'lr'?)` -> the rename it suggests. */
export function suggestedRename(message: string): { from: string; to: string } | undefined {
  const m = /unknown key '([^']+)' \(did you mean '([^']+)'\?\)/.exec(message);
  return m ? { from: m[1]!, to: m[2]! } : undefined;
}

export class ConfigDiagnostics implements vscode.Disposable {
  readonly collection = vscode.languages.createDiagnosticCollection('rft-config');
  private readonly pending: DebouncedChecker;

  constructor(
    private readonly validate: (file: string, text?: string, deep?: boolean) => Promise<{ issues: ConfigIssueAt[] }>,
    debounceMs = 300,
  ) {
    this.pending = new DebouncedChecker(debounceMs);
  }

  /** `deep` (on open, on save, before a run): also what `rft run --check` refuses, for the saved file (a few seconds). */
  async check(doc: Doc, deep = false): Promise<ConfigIssueAt[] | undefined> {
    if (!isRunConfig(doc.uri.fsPath)) return undefined;
    const r = await this.validate(doc.uri.fsPath, doc.isDirty ? doc.getText() : undefined, deep && !doc.isDirty);
    this.collection.set(
      doc.uri,
      r.issues.map((i) => configDiagnostic(i, doc)),
    );
    return r.issues;
  }

  /** A config file that may not be open in an editor (`deep`: also what `rft run --check` refuses). */
  async checkFile(uri: vscode.Uri, deep = true): Promise<ConfigIssueAt[]> {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    const text = open ? undefined : new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    const doc: Doc = open ?? {
      uri,
      getText: () => text!,
      lineCount: text!.split('\n').length,
      lineAt: (n) => ({ text: text!.split('\n')[n] ?? '' }),
    };
    return (await this.check(doc, deep)) ?? [];
  }

  schedule(doc: Doc): void {
    if (!isRunConfig(doc.uri.fsPath)) return;
    this.pending.schedule(doc.uri.fsPath, () => this.check(doc));
  }

  dispose(): void {
    this.pending.dispose();
    this.collection.dispose();
  }
}

/** Quick fix for an unknown key that is one typo away from a known one. */
export class ConfigQuickFixes implements vscode.CodeActionProvider {
  static readonly kinds = [vscode.CodeActionKind.QuickFix];

  provideCodeActions(
    doc: vscode.TextDocument,
    _range: vscode.Range,
    ctx: vscode.CodeActionContext,
  ): vscode.CodeAction[] {
    const out: vscode.CodeAction[] = [];
    for (const d of ctx.diagnostics) {
      if (d.source !== 'rft config') continue;
      const s = suggestedRename(d.message);
      if (!s) continue;
      const line = doc.lineAt(d.range.start.line).text;
      const col = line.search(new RegExp(`(^|[\\s{,-])${s.from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*:`));
      if (col < 0) continue;
      const at = line.indexOf(s.from, col);
      const fix = new vscode.CodeAction(`Rename '${s.from}' to '${s.to}'`, vscode.CodeActionKind.QuickFix);
      fix.edit = new vscode.WorkspaceEdit();
      fix.edit.replace(doc.uri, new vscode.Range(d.range.start.line, at, d.range.start.line, at + s.from.length), s.to);
      fix.diagnostics = [d];
      fix.isPreferred = true;
      out.push(fix);
    }
    return out;
  }
}
