// "Did you mean `prompt`?" for tasksets written with other names: a JSONL record that misses a
// required field but carries a field that usually means it (`question` for `prompt`, `final` for
// `answer`) or is one typo away from it gets the suggestion in its Problems entry; quick fixes map
// it in the run config (Map Fields, preferred: the data stays as it is) or rename the field on that
// line or in every record of the file.
import * as vscode from 'vscode';
import { suggestField } from './field-synonyms.js';

export { suggestField };

/** `field 'prompt': required field is missing; also 'answer': required field is missing`: each missing field. */
const MISSING = /(?:^field |; also )'([\w.]+)': required field is missing/g;

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
  return renamesFor(message, line)[0];
}

/** Every missing field of the message that the record carries under another name. */
export function renamesFor(message: string, line: string): { from: string; to: string }[] {
  const missing = [...message.matchAll(MISSING)].map((m) => m[1]!);
  const rec = missing.length ? recordOn(line) : undefined;
  const out: { from: string; to: string }[] = [];
  for (const to of missing) {
    const from =
      rec && suggestField(to, Object.fromEntries(Object.entries(rec).filter(([k]) => !out.some((o) => o.from === k))));
    if (from) out.push({ from, to });
  }
  return out;
}

/** Missing fields a config's `format:` can map to another field (`answer` <- response_key). */
const MAPPABLE = new Set(['prompt', 'answer', 'response', 'id']);

/** The message with the suggestion added (what Problems shows). */
export function withSuggestion(message: string, line: string): string {
  const rs = renamesFor(message, line);
  if (!rs.length) return message;
  const mappable = rs.every((r) => MAPPABLE.has(r.to));
  const said = rs.map((r) => `the record has '${r.from}': did you mean '${r.to}'?`).join('; ');
  const fix =
    rs.length === 1
      ? mappable
        ? `a quick fix maps '${rs[0]!.from}' as the ${rs[0]!.to} in the run config, or renames it`
        : 'a quick fix renames it'
      : mappable
        ? 'quick fixes map them in the run config, or rename them'
        : 'quick fixes rename them';
  return `${message}; ${said} (${fix})`;
}

/** Column range of the key `"name":` on a JSON line. */
function keyRange(line: string, name: string): [number, number] | undefined {
  const m = new RegExp(`"${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"\\s*:`).exec(line);
  return m ? [m.index + 1, m.index + 1 + name.length] : undefined;
}

/** Names a user's own column is renamed to when it clashes with a schema field (`difficulty: "easy"`). */
const OWN_NAMES: Record<string, string> = {
  difficulty: 'level',
  domain: 'subject',
  choices: 'options',
  entry_point: 'function_name',
  entryPoint: 'function_name',
  messages: 'conversation',
  metadata: 'info',
};

/**
 * A column named like a field RFT Studio reads, that the loader says is (or may be) the user's own:
 * the warning `field 'difficulty': holds "easy", not the task difficulty…` or an error with
 * `('difficulty' is read as …)`. Returns the column and a free name to rename it to.
 */
export function ownColumnRename(message: string, fileText: string): { from: string; to: string } | undefined {
  const m = /^field '(\w+)': holds .* kept as your own column/.exec(message) ?? /\('(\w+)' is read as /.exec(message);
  const from = m?.[1];
  if (!from || !(from in OWN_NAMES)) return undefined;
  const taken = (k: string) => new RegExp(`(^|[{,\\s])"?${k}"?\\s*([:,]|$)`, 'm').test(fileText);
  let to = OWN_NAMES[from]!;
  if (taken(to)) to = `${from}_label`;
  for (let i = 2; taken(to); i++) to = `${from}_label${i}`;
  return { from, to };
}

/** Column range of the key `name:` of a YAML list item's map (`- name: …` or `  name: …`). */
function yamlKeyRange(line: string, name: string): [number, number] | undefined {
  const m = new RegExp(`^(\\s*(?:-\\s+)?)["']?${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}["']?\\s*:`).exec(line);
  if (!m) return undefined;
  const start = line.indexOf(name, m[1]!.length);
  return [start, start + name.length];
}

/** Column range of `name` in a CSV header line, or undefined. */
function headerRange(line: string, name: string): [number, number] | undefined {
  let at = 0;
  for (const cell of line.split(',')) {
    const t = cell.trim().replace(/^"(.*)"$/, '$1');
    if (t === name) {
      const start = line.indexOf(name, at);
      return [start, start + name.length];
    }
    at += cell.length + 1;
  }
  return undefined;
}

export class TasksetQuickFixes implements vscode.CodeActionProvider {
  static readonly kinds = [vscode.CodeActionKind.QuickFix];

  provideCodeActions(
    doc: vscode.TextDocument,
    _range: vscode.Range,
    ctx: vscode.CodeActionContext,
  ): vscode.CodeAction[] {
    const out: vscode.CodeAction[] = [];
    for (const d of ctx.diagnostics) {
      if (d.source !== 'rft taskset') continue;
      const n = d.range.start.line;
      const line = doc.lineAt(n).text;
      for (const r of renamesFor(d.message, line)) this.fixesFor(doc, d, n, line, r, out);
      const own = ownColumnRename(d.message, doc.getText());
      if (own) this.renameColumn(doc, d, own, out);
    }
    return out;
  }

  /** The user's column renamed in every record (JSONL / JSON keys, the CSV header): read as theirs, in metadata. */
  private renameColumn(
    doc: vscode.TextDocument,
    d: vscode.Diagnostic,
    r: { from: string; to: string },
    out: vscode.CodeAction[],
  ): void {
    const fix = new vscode.CodeAction(
      `Rename the column '${r.from}' to '${r.to}' (your own, kept in metadata)`,
      vscode.CodeActionKind.QuickFix,
    );
    fix.edit = new vscode.WorkspaceEdit();
    let count = 0;
    if (/\.csv$/i.test(doc.uri.fsPath)) {
      const at = doc.lineCount ? headerRange(doc.lineAt(0).text, r.from) : undefined;
      if (at) {
        fix.edit.replace(doc.uri, new vscode.Range(0, at[0], 0, at[1]), r.to);
        count++;
      }
    } else {
      const yaml = /\.ya?ml$/i.test(doc.uri.fsPath);
      for (let i = 0; i < doc.lineCount; i++) {
        const k = yaml ? yamlKeyRange(doc.lineAt(i).text, r.from) : keyRange(doc.lineAt(i).text, r.from);
        if (!k) continue;
        fix.edit.replace(doc.uri, new vscode.Range(i, k[0], i, k[1]), r.to);
        count++;
      }
    }
    if (!count) return;
    fix.diagnostics = [d];
    fix.isPreferred = true;
    out.push(fix);
  }

  private fixesFor(
    doc: vscode.TextDocument,
    d: vscode.Diagnostic,
    n: number,
    line: string,
    r: { from: string; to: string },
    out: vscode.CodeAction[],
  ): void {
    const at = keyRange(line, r.from);
    if (!at) return;
    // The user's data stays as it is: the config says which field is which (preferred over renaming).
    if (MAPPABLE.has(r.to)) {
      const map = new vscode.CodeAction(
        `Map '${r.from}' as the ${r.to} in the run config`,
        vscode.CodeActionKind.QuickFix,
      );
      map.command = {
        command: 'rftStudio.mapFields',
        title: map.title,
        arguments: [doc.uri, { target: r.to, key: r.from }],
      };
      map.diagnostics = [d];
      map.isPreferred = true;
      out.push(map);
    }
    const one = new vscode.CodeAction(`Rename '${r.from}' to '${r.to}'`, vscode.CodeActionKind.QuickFix);
    one.edit = new vscode.WorkspaceEdit();
    one.edit.replace(doc.uri, new vscode.Range(n, at[0], n, at[1]), r.to);
    one.diagnostics = [d];
    one.isPreferred = !MAPPABLE.has(r.to);
    out.push(one);
    // The same rename on every record that has the field and not the target yet.
    const all = new vscode.CodeAction(
      `Rename '${r.from}' to '${r.to}' in every record of this file`,
      vscode.CodeActionKind.QuickFix,
    );
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
}
