// "Did you mean `prompt`?" for tasksets written with other names: a JSONL record that misses a
// required field but carries a field that usually means it (`question` for `prompt`, `solution` for
// `answer`) or is one typo away from it gets the suggestion in its Problems entry, and a quick fix
// renames the field on that line or in every record of the file.
import * as vscode from 'vscode';
import { suggestField } from './field-synonyms.js';

export { suggestField };

const MISSING = /^field '([\w.]+)': required field is missing/;

/** The JSON object on a JSONL line, or undefined. */
function recordOn(line: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(line) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** For a "required field is missing" diagnostic message and its line: { from, to } or undefined. */
export function renameFor(message: string, line: string): { from: string; to: string } | undefined {
  const m = MISSING.exec(message);
  const rec = m ? recordOn(line) : undefined;
  const from = rec && suggestField(m![1]!, rec);
  return from ? { from, to: m![1]! } : undefined;
}

/** The message with the suggestion added (what Problems shows). */
export function withSuggestion(message: string, line: string): string {
  const r = renameFor(message, line);
  return r ? `${message}; the record has '${r.from}': did you mean '${r.to}'? (a quick fix renames it)` : message;
}

/** Column range of the key `"name":` on a JSON line. */
function keyRange(line: string, name: string): [number, number] | undefined {
  const m = new RegExp(`"${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"\\s*:`).exec(line);
  return m ? [m.index + 1, m.index + 1 + name.length] : undefined;
}

export class TasksetQuickFixes implements vscode.CodeActionProvider {
  static readonly kinds = [vscode.CodeActionKind.QuickFix];

  provideCodeActions(doc: vscode.TextDocument, _range: vscode.Range, ctx: vscode.CodeActionContext): vscode.CodeAction[] {
    const out: vscode.CodeAction[] = [];
    for (const d of ctx.diagnostics) {
      if (d.source !== 'rft taskset') continue;
      const n = d.range.start.line;
      const line = doc.lineAt(n).text;
      const r = renameFor(d.message, line);
      const at = r && keyRange(line, r.from);
      if (!r || !at) continue;
      const one = new vscode.CodeAction(`Rename '${r.from}' to '${r.to}'`, vscode.CodeActionKind.QuickFix);
      one.edit = new vscode.WorkspaceEdit();
      one.edit.replace(doc.uri, new vscode.Range(n, at[0], n, at[1]), r.to);
      one.diagnostics = [d];
      one.isPreferred = true;
      out.push(one);
      // The same rename on every record that has the field and not the target yet.
      const all = new vscode.CodeAction(`Rename '${r.from}' to '${r.to}' in every record of this file`, vscode.CodeActionKind.QuickFix);
      all.edit = new vscode.WorkspaceEdit();
      let count = 0;
      for (let i = 0; i < doc.lineCount; i++) {
        const text = doc.lineAt(i).text;
        const rec = recordOn(text);
        const k = rec && r.from in rec && !(r.to in rec) ? keyRange(text, r.from) : undefined;
        if (!k) continue;
        all.edit.replace(doc.uri, new vscode.Range(i, k[0], i, k[1]), r.to);
        count++;
      }
      if (count > 1) {
        all.title += ` (${count} records)`;
        all.diagnostics = [d];
        out.push(all);
      }
    }
    return out;
  }
}
