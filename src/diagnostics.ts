// Taskset validation in the Problems panel: each backend issue becomes a diagnostic on its line.
// Validation runs on open, on edit (debounced, with the unsaved text) and on save; the backend's
// file watcher also pushes reports for files changed outside the editor.
import * as vscode from 'vscode';
import { existsSync, readFileSync, statSync } from 'node:fs';
import type { TasksetIssue, TasksetReport } from '../backend/core/protocol.js';
import { DebouncedChecker } from './debounced-checker.js';
import { withSuggestion } from './taskset-fixes.js';
import { TASKSET_EXTENSIONS } from '../backend/core/taskset-text/index.js';

export function toDiagnostic(
  issue: TasksetIssue,
  doc?: { lineCount: number; lineAt(n: number): { text: string } },
): vscode.Diagnostic {
  const line = Math.max(0, (issue.line ?? 1) - 1);
  const len = doc && line < doc.lineCount ? doc.lineAt(line).text.length : 0;
  const range = new vscode.Range(line, 0, line, Math.max(len, 1));
  const base = issue.field ? `field '${issue.field}': ${issue.message}` : issue.message;
  // A missing field the record carries under another name: say which (a quick fix renames it).
  const msg = doc && line < doc.lineCount ? withSuggestion(base, doc.lineAt(line).text) : base;
  const d = new vscode.Diagnostic(
    range,
    msg,
    issue.severity === 'warning' ? vscode.DiagnosticSeverity.Warning : vscode.DiagnosticSeverity.Error,
  );
  d.source = 'rft taskset';
  return d;
}

/** A file's lines as toDiagnostic reads them (files over 32 MiB: none, ranges start at column 0). */
function diskLines(file: string): { lineCount: number; lineAt(n: number): { text: string } } | undefined {
  try {
    if (statSync(file).size > 32 * 1024 * 1024) return undefined;
    const lines = readFileSync(file, 'utf8').split('\n');
    return { lineCount: lines.length, lineAt: (n) => ({ text: lines[n] ?? '' }) };
  } catch {
    return undefined;
  }
}

export { TASKSET_EXTENSIONS };

export function looksLikeTaskset(path: string): boolean {
  const p = path.replace(/\\/g, '/');
  return TASKSET_EXTENSIONS.some((e) => p.endsWith(e)) && /(^|\/)(tasksets?|data)\//.test(p);
}

/** Which files are tasksets beyond the folder names, and a note for a file read with a detected mapping. */
export interface TasksetKnowledge {
  isTaskset(file: string, text?: string): boolean;
  note(file: string): string | undefined;
}

export class TasksetDiagnostics implements vscode.Disposable {
  readonly collection = vscode.languages.createDiagnosticCollection('rft-taskset');
  private readonly pending: DebouncedChecker;

  constructor(
    private readonly validate: (file: string, text?: string) => Promise<TasksetReport>,
    private readonly onReport: (r: TasksetReport) => void = () => undefined,
    debounceMs = 300,
    private readonly knows: TasksetKnowledge = { isTaskset: looksLikeTaskset, note: () => undefined },
  ) {
    this.pending = new DebouncedChecker(debounceMs);
  }

  apply(r: TasksetReport): void {
    const uri = vscode.Uri.file(r.file);
    // A report of a file that went while it was read (renamed, deleted): no "ENOENT" entry left behind.
    if (r.issues.some((i) => /\bENOENT\b/.test(i.message)) && !existsSync(r.file)) {
      this.collection.delete(uri);
      return;
    }
    // A file not open in an editor is read from disk: its lines give the ranges and the did-you-mean.
    const doc =
      vscode.workspace.textDocuments.find((d) => d.uri.fsPath === r.file) ??
      (r.issues.length ? diskLines(r.file) : undefined);
    const diags = r.issues.map((i) => toDiagnostic(i, doc));
    // Read with a detected mapping: say which, so the errors left are read against it.
    const note = this.knows.note(r.file);
    if (note) {
      const d = new vscode.Diagnostic(new vscode.Range(0, 0, 0, 1), note, vscode.DiagnosticSeverity.Information);
      d.source = 'rft taskset';
      diags.unshift(d);
    }
    this.collection.set(uri, diags);
    this.onReport(r);
  }

  /** A file moved or deleted: its problems and its report go. */
  forget(uri: vscode.Uri): void {
    this.collection.delete(uri);
  }

  /** Errors in Problems over all taskset files (the view's badge: the same number as Problems). */
  errorCount(): number {
    let n = 0;
    this.collection.forEach(
      (_uri, ds) => (n += ds.filter((d) => d.severity === vscode.DiagnosticSeverity.Error).length),
    );
    return n;
  }

  async check(doc: { uri: vscode.Uri; getText(): string; isDirty?: boolean }): Promise<TasksetReport | undefined> {
    // Files on disk only (not git: / output: documents of the same path).
    if (
      (doc.uri.scheme ?? 'file') !== 'file' ||
      !this.knows.isTaskset(doc.uri.fsPath, doc.isDirty ? doc.getText() : undefined)
    )
      return undefined;
    const r = await this.validate(doc.uri.fsPath, doc.isDirty ? doc.getText() : undefined);
    this.apply(r);
    return r;
  }

  /** Validates a file as the editor reads it (the config's or the detected mapping) and shows the result. */
  async validateFile(file: string, text?: string): Promise<TasksetReport> {
    const r = await this.validate(file, text);
    this.apply(r);
    return r;
  }

  /** Debounced check while the user types. */
  schedule(doc: { uri: vscode.Uri; getText(): string; isDirty?: boolean }): void {
    this.pending.schedule(doc.uri.fsPath, () => this.check(doc));
  }

  dispose(): void {
    this.pending.dispose();
    this.collection.dispose();
  }
}
