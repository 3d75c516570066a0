// A run config's problems at the line of the key they are about, for the editor's Problems panel:
// YAML syntax errors, schema errors (a missing key at its parent's line), and unknown keys with the
// nearest known key as a "did you mean" suggestion.
import { isMap, isScalar, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { readYaml } from './yaml-safe.js';
import { distance } from './closest.js';
import { z } from 'zod';
import { dottedPath, pathSegments, RunConfigSchema } from './config.js';
import { applyKeyAliases, writtenPath } from './config-aliases.js';
import type { ConfigIssue } from './config.js';
import type { ConfigIssueAt } from './protocol.js';

export function configIssuesAt(text: string): ConfigIssueAt[] {
  // Syntax, duplicate keys and aliases, with the parser's costs bounded (yaml-safe.ts).
  const read = readYaml(text);
  if (!read.ok) return read.problems.map((p) => ({ line: p.line, field: '(syntax)', message: p.message }));
  const { doc, lc } = read;
  const lineOf = (n: Node | null | undefined) => (n?.range ? lc.linePos(n.range[0]).line : undefined);
  const at = (u: ConfigIssue, severity?: 'warning'): ConfigIssueAt => ({
    line: lineOf(keyOrValue(doc, pathSegments(u.path))),
    field: u.path,
    message: u.message,
    ...(severity ? { severity } : {}),
  });
  // A renamed key (config-aliases.ts) is a warning at the old key; the rest is checked under the new name.
  const aliased = applyKeyAliases(read.value ?? {});
  const renamed = aliased.warnings.map((w) => at(w, 'warning'));
  if (aliased.issues.length) return [...aliased.issues.map((i) => at(i)), ...renamed];
  const r = RunConfigSchema.safeParse(aliased.value);
  // (A field this run would not read is a schema issue too, at its key: config-reads.ts.)
  if (r.success) return renamed;
  const out: ConfigIssueAt[] = [...renamed];
  for (const i of r.error.issues) {
    // A renamed key's issue is placed at the key the file wrote.
    i.path = pathSegments(writtenPath(dottedPath(i.path), aliased.warnings));
    const path = i.path.map(String);
    if (i.code === z.ZodIssueCode.unrecognized_keys) {
      const parent = nodeAt(doc, i.path);
      const known = knownKeys(i.path);
      for (const k of i.keys) {
        const keyNode = isMap(parent)
          ? parent.items.find((p) => isScalar(p.key) && String(p.key.value) === k)?.key
          : undefined;
        const near = nearestKey(k, known);
        out.push({
          line: lineOf(keyNode as Node | undefined) ?? lineOf(parent),
          field: [...path, k].join('.'),
          message: `unknown key '${k}'${near ? ` (did you mean '${near}'?)` : ''}`,
        });
      }
      continue;
    }
    // The node itself, or (for a missing key) the nearest parent that exists.
    let line: number | undefined;
    for (let n = i.path.length; n >= 0 && line === undefined; n--)
      line = n === 0 ? (i.path.length ? lineOf(doc.contents as Node) : 1) : lineOf(keyOrValue(doc, i.path.slice(0, n)));
    out.push({ line, field: i.path.length ? dottedPath(i.path) : '(root)', message: i.message });
  }
  return out;
}

function nodeAt(doc: Document, path: (string | number)[]): Node | undefined {
  return (path.length ? doc.getIn(path, true) : doc.contents) as Node | undefined;
}

/** The key node of `path` in its parent map (its line is the key's), else the value node. */
function keyOrValue(doc: Document, path: (string | number)[]): Node | undefined {
  const parent = nodeAt(doc, path.slice(0, -1));
  const last = String(path[path.length - 1]);
  if (isMap(parent)) {
    const pair = parent.items.find((p) => isScalar(p.key) && String(p.key.value) === last);
    if (pair) return pair.key as Node;
  }
  return nodeAt(doc, path);
}

/** The keys the schema allows at `path` (objects only), for suggestions. */
export function knownKeys(path: (string | number)[]): string[] {
  let s: z.ZodTypeAny = RunConfigSchema;
  for (const p of path) {
    s = unwrap(s);
    if (s instanceof z.ZodObject) s = (s.shape as Record<string, z.ZodTypeAny>)[String(p)] ?? z.never();
    else if (s instanceof z.ZodArray) s = s.element;
    else if (s instanceof z.ZodRecord) s = s.valueSchema;
    else return [];
  }
  s = unwrap(s);
  return s instanceof z.ZodObject ? Object.keys(s.shape as object) : [];
}

function unwrap(s: z.ZodTypeAny): z.ZodTypeAny {
  for (;;) {
    if (s instanceof z.ZodOptional || s instanceof z.ZodNullable) s = s.unwrap();
    else if (s instanceof z.ZodDefault) s = s._def.innerType;
    else if (s instanceof z.ZodEffects) s = s.innerType();
    else if (s instanceof z.ZodLazy) s = s.schema;
    else return s;
  }
}

/**
 * The known config key a misspelt one likely meant: within edit distance 2 (transpositions count 1),
 * or a prefix / containment match. Looser than core/closest.ts's `closest` (names of registered
 * parts), since a key's siblings are few and a truncated key (`expert` for `expert_ratio`) is common.
 */
function nearestKey(k: string, known: string[]): string | undefined {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of known) {
    const d = c.includes(k) || k.includes(c) ? 1 : distance(k.toLowerCase(), c.toLowerCase());
    // Ties go to the candidate of the same length (a transposition rather than a dropped letter).
    if (d < bestD || (d === bestD && c.length === k.length && best?.length !== k.length)) [best, bestD] = [c, d];
  }
  return bestD <= Math.max(2, Math.floor(k.length / 3)) ? best : undefined;
}

/**
 * Issues found on the parsed config (finite numbers, names against the registries: coordinator/
 * config-check.ts), each placed at the line of its key; paths like `stages[1].algorithm.name`.
 */
export function issuesAtLines(text: string, issues: { path: string; message: string }[]): ConfigIssueAt[] {
  const lc = new LineCounter();
  // uniqueKeys: false: the package's own duplicate check is quadratic (yaml-safe.ts checked them already).
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: false });
  return issues.map((i) => {
    const path = i.path.split(/\.|(?=\[)/).map((p) => (/^\[\d+\]$/.test(p) ? Number(p.slice(1, -1)) : p));
    let line: number | undefined;
    for (let n = path.length; n > 0 && line === undefined; n--) {
      const node = keyOrValue(doc, path.slice(0, n));
      if (node?.range) line = lc.linePos(node.range[0]).line;
    }
    return { line: line ?? 1, field: i.path, message: i.message };
  });
}
