// Completion and hover in run configs (`*.rft.yaml`) from the JSON schema generated out of the zod
// schema (media/schemas/rft-config.schema.json, scripts/config-schema.ts). With the YAML extension
// installed it reads the same schema (contributes.yamlValidation) and these providers stand back.
// The key path at the cursor comes from indentation, which is all a config's block YAML needs.
import * as vscode from 'vscode';
import schemaJson from '../media/schemas/rft-config.schema.json';

export interface SchemaNode {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  /** Registered names (algorithm.name, workflow.name, workflow.reward): offered, not enforced. */
  examples?: unknown[];
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  const?: unknown;
}

export const CONFIG_SCHEMA = schemaJson as unknown as SchemaNode;

const KEY = /^(\s*)(-\s+)?([A-Za-z_][\w-]*)\s*:(.*)$/;

/** A key line: its key's column and, for a `- key:` list item, the dash's column. */
interface KeyLine {
  col: number;
  dashCol?: number;
  key: string;
}

function parse(line: string): KeyLine | undefined {
  const m = KEY.exec(line);
  if (!m) return undefined;
  const col = m[1]!.length + (m[2]?.length ?? 0);
  return { col, key: m[3]!, ...(m[2] ? { dashCol: m[1]!.length } : {}) };
}

/**
 * The key path of the mapping that holds a key at column `col` on line `at` (outermost first, '[]'
 * for a list item): ['trainer'] for `  lr:` under `trainer:`, ['stages', '[]'] inside a stage.
 * `dashCol`: the line is itself a `- key:` item.
 */
export function parentPath(lines: string[], at: number, col: number, dashCol?: number): string[] {
  const out: string[] = [];
  // Mapping mode looks for the key owning a mapping at `want`; list mode for the key of a list
  // whose dashes are at `want`.
  let list = dashCol !== undefined;
  let want = list ? dashCol! : col;
  if (list) out.unshift('[]');
  for (let i = at - 1; i >= 0 && (list || want > 0); i--) {
    const p = parse(lines[i]!);
    if (!p) continue;
    if (!list && p.col === want && p.dashCol !== undefined) {
      // The first key of the list item this mapping is.
      out.unshift('[]');
      list = true;
      want = p.dashCol;
    } else if (list ? p.col <= want : p.col < want) {
      out.unshift(p.key);
      list = p.dashCol !== undefined;
      if (list) out.unshift('[]');
      want = list ? p.dashCol! : p.col;
    }
  }
  return out;
}

/** Keys already written in the mapping that holds line `at` (a key at column `col`). */
function siblings(lines: string[], at: number, col: number, dash: boolean): Set<string> {
  const out = new Set<string>();
  if (!dash) {
    for (let i = at - 1; i >= 0; i--) {
      const p = parse(lines[i]!);
      if (!p) continue;
      if (p.col < col) break;
      if (p.col === col) out.add(p.key);
      if (p.col === col && p.dashCol !== undefined) break; // the item's first key
    }
  }
  for (let i = at + 1; i < lines.length; i++) {
    const p = parse(lines[i]!);
    if (!p) continue;
    if (p.col < col || (p.col === col && p.dashCol !== undefined)) break; // out of it, or the next item
    if (p.col === col) out.add(p.key);
  }
  return out;
}

/** The schema node at a key path ('[]' steps into array items). */
export function nodeAt(path: string[], root: SchemaNode = CONFIG_SCHEMA): SchemaNode | undefined {
  let n: SchemaNode | undefined = root;
  for (const k of path) {
    if (!n) return undefined;
    if (k === '[]') n = n.items;
    else n = n.properties?.[k] ?? n.anyOf?.map((a) => a.properties?.[k]).find(Boolean);
  }
  return n;
}

function typeText(n: SchemaNode): string {
  if (n.enum) return n.enum.map((e) => JSON.stringify(e)).join(' | ');
  if (n.const !== undefined) return JSON.stringify(n.const);
  // A union (trainer.lr: a positive number or "auto"): each alternative's own type.
  if (!n.type && n.anyOf?.length) return n.anyOf.map(typeText).join(' | ');
  const t = Array.isArray(n.type) ? n.type.join(' | ') : (n.type ?? 'any');
  const bounds = [
    n.exclusiveMinimum !== undefined ? `> ${n.exclusiveMinimum}` : n.minimum !== undefined ? `≥ ${n.minimum}` : '',
    n.exclusiveMaximum !== undefined ? `< ${n.exclusiveMaximum}` : n.maximum !== undefined ? `≤ ${n.maximum}` : '',
  ].filter(Boolean);
  return `${t}${bounds.length ? ` (${bounds.join(', ')})` : ''}`;
}

/** Hover text for the key on line `at`, or undefined where the line has no known key. */
export function hoverAt(lines: string[], at: number): string | undefined {
  const p = parse(lines[at] ?? '');
  if (!p) return undefined;
  const path = [...parentPath(lines, at, p.col, p.dashCol), p.key];
  const n = nodeAt(path);
  if (!n) return undefined;
  const dflt =
    n.default !== undefined && !(typeof n.default === 'object' && n.default && Object.keys(n.default).length === 0)
      ? ` · default \`${JSON.stringify(n.default)}\``
      : '';
  return `**${path.filter((k) => k !== '[]').join('.')}** · ${typeText(n)}${dflt}${n.description ? `\n\n${n.description}` : ''}`;
}

export interface ConfigCompletion {
  label: string;
  insert: string;
  detail: string;
  doc?: string;
  kind: 'key' | 'value';
}

/**
 * Keys allowed where the cursor is (minus those already at that level), or the values of an enum /
 * boolean after `key: `.
 */
export function completionsAt(lines: string[], at: number, ch: number): ConfigCompletion[] {
  const before = (lines[at] ?? '').slice(0, ch);
  const value = /^(\s*)(-\s+)?([A-Za-z_][\w-]*)\s*:\s*([\w.-]*)$/.exec(before);
  if (value) {
    const col = value[1]!.length + (value[2]?.length ?? 0);
    const n = nodeAt([...parentPath(lines, at, col, value[2] ? value[1]!.length : undefined), value[3]!]);
    const vals = n?.enum ?? n?.examples ?? (n?.type === 'boolean' ? [true, false] : []);
    return vals.map((v) => ({
      label: String(v),
      insert: String(v),
      detail: n?.default === v ? 'default' : typeText(n!),
      kind: 'value' as const,
    }));
  }
  const key = /^(\s*)(-\s+)?([\w-]*)$/.exec(before);
  if (!key) return [];
  const col = key[1]!.length + (key[2]?.length ?? 0);
  const parent = nodeAt(parentPath(lines, at, col, key[2] ? key[1]!.length : undefined));
  const props = parent?.properties ?? parent?.anyOf?.find((a) => a.properties)?.properties;
  if (!props) return [];
  const present = siblings(lines, at, col, !!key[2]);
  return Object.entries(props)
    .filter(([k]) => !present.has(k))
    .map(([k, n]) => ({
      label: k,
      insert: n.type === 'object' || n.type === 'array' ? `${k}:\n` : `${k}: `,
      detail: typeText(n),
      doc: n.description,
      kind: 'key' as const,
    }));
}

const lines = (d: vscode.TextDocument) => d.getText().split(/\r?\n/);

export class ConfigSchemaProvider implements vscode.CompletionItemProvider, vscode.HoverProvider {
  provideCompletionItems(doc: vscode.TextDocument, pos: vscode.Position): vscode.CompletionItem[] {
    return completionsAt(lines(doc), pos.line, pos.character).map((c) => {
      const item = new vscode.CompletionItem(
        c.label,
        c.kind === 'key' ? vscode.CompletionItemKind.Property : vscode.CompletionItemKind.EnumMember,
      );
      item.insertText = c.insert;
      item.detail = c.detail;
      if (c.doc) item.documentation = new vscode.MarkdownString(c.doc);
      return item;
    });
  }

  provideHover(doc: vscode.TextDocument, pos: vscode.Position): vscode.Hover | undefined {
    const text = hoverAt(lines(doc), pos.line);
    return text ? new vscode.Hover(new vscode.MarkdownString(text)) : undefined;
  }
}

/** The YAML extension reads the same schema (contributes.yamlValidation): then it answers alone. */
export function yamlExtensionPresent(): boolean {
  return !!vscode.extensions?.getExtension('redhat.vscode-yaml');
}
