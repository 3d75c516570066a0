// YAML from the user, parsed with bounds: the `yaml` package's own duplicate-key check and its alias
// resolution are quadratic (100k keys in one map took minutes, 16k aliases 9 s), and aliases can
// expand to a "billion laughs" or refer to the node they are in. Keys are checked for duplicates
// here in one pass, aliases are counted and checked for self-reference before anything resolves
// them, and each problem comes back with its line instead of a bare ReferenceError.
import { isAlias, isMap, isScalar, LineCounter, parseDocument, visit, type Document, type Node } from 'yaml';

/** More aliases than this in one file is refused: no config needs them, and resolving them is quadratic. */
export const MAX_YAML_ALIASES = 1000;

export interface YamlProblem {
  line: number;
  message: string;
}

export type YamlRead =
  | { ok: true; doc: Document; lc: LineCounter; value: unknown }
  | { ok: false; problems: YamlProblem[] };

/** Parses TEXT and converts it to plain values, or says at which lines it cannot be (syntax, duplicate keys, aliases). */
export function readYaml(text: string, o: { maxAliases?: number } = {}): YamlRead {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: false });
  const lineAt = (pos: number | undefined) => (pos === undefined ? 1 : lc.linePos(pos).line);
  if (doc.errors.length)
    return {
      ok: false,
      problems: doc.errors.map((e) => ({
        line: e.linePos?.[0]?.line ?? lineAt(e.pos[0]),
        message: `YAML syntax: ${e.message.split('\n')[0]}`,
      })),
    };
  const problems = boundsProblems(doc, lineAt, o.maxAliases ?? MAX_YAML_ALIASES);
  if (problems.length) return { ok: false, problems };
  try {
    return { ok: true, doc, lc, value: doc.toJS() };
  } catch (e) {
    // The package's maxAliasCount (the expanded size) is what stops a "billion laughs".
    const why = /alias count/i.test((e as Error).message)
      ? 'its aliases expand to too much data (a "billion laughs"): refused'
      : (e as Error).message;
    return { ok: false, problems: [{ line: firstAliasLine(doc, lineAt), message: `YAML: ${why}` }] };
  }
}

function boundsProblems(doc: Document, lineAt: (p: number | undefined) => number, max: number): YamlProblem[] {
  const out: YamlProblem[] = [];
  const anchors = new Map<string, Node>();
  let aliases = 0;
  visit(doc, (_key, node) => {
    const n = node as Node;
    if ('anchor' in n && typeof n.anchor === 'string' && n.anchor) anchors.set(n.anchor, n);
    if (isMap(n)) {
      const seen = new Map<string, number>();
      for (const p of n.items) {
        if (!isScalar(p.key)) continue;
        const k = String(p.key.value);
        const line = lineAt(p.key.range?.[0]);
        const first = seen.get(k);
        if (first !== undefined) out.push({ line, message: `duplicate key '${k}' (first at line ${first})` });
        else seen.set(k, line);
      }
    }
    if (isAlias(n)) {
      aliases++;
      const line = lineAt(n.range?.[0]);
      if (aliases === max + 1) {
        out.push({ line, message: `YAML: more than ${max} aliases (*NAME): refused (resolving them is quadratic)` });
        return visit.BREAK;
      }
      // A pre-order visit has registered the anchored node before anything inside it.
      const target = anchors.get(n.source);
      const at = n.range?.[0];
      if (target?.range && at !== undefined && at >= target.range[0] && at < target.range[2])
        out.push({ line, message: `YAML: alias '*${n.source}' refers to the node it is in (a self-reference)` });
    }
    return undefined;
  });
  return out;
}

function firstAliasLine(doc: Document, lineAt: (p: number | undefined) => number): number {
  let line = 1;
  visit(doc, {
    Alias(_k, n) {
      line = lineAt(n.range?.[0]);
      return visit.BREAK;
    },
  });
  return line;
}
