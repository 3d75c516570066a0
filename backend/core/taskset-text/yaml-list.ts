// A YAML taskset: a list of records, or a map with a `tasks` list. Lines come from the `yaml`
// package's node ranges; a syntax error is reported at its line and spoils only the record it is in.
import { LineCounter, isMap, isSeq, parseDocument, type Node } from 'yaml';
import type { RawRecord } from './index.js';

export function readYamlList(text: string): RawRecord[] {
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc });
  const errs = doc.errors.map((e) => ({
    pos: e.pos[0],
    line: e.linePos?.[0].line ?? lc.linePos(e.pos[0]).line,
    message: e.message.split('\n')[0]!.replace(/ at line (\d+), column (\d+):?$/, ' (line $1, column $2)'),
  }));
  let list: Node | null | undefined = doc.contents as Node | null;
  if (isMap(list)) list = list.get('tasks', true) as Node | undefined;
  const out: RawRecord[] = [];
  if (!isSeq(list)) {
    if (doc.contents === null && errs.length === 0) return out; // empty file
    for (const e of errs) out.push({ line: e.line, error: `bad YAML: ${e.message}`, field: '(file)' });
    if (errs.length === 0)
      out.push({ line: 1, error: "a YAML taskset is a list of records or a map with a 'tasks' list", field: '(file)' });
    return out;
  }
  const used = new Set<number>();
  for (const item of list.items as Node[]) {
    const [start, , end] = item.range ?? [0, 0, 0];
    const line = lc.linePos(start).line;
    const mine = errs.flatMap((e, k) => (e.pos >= start && e.pos < end ? [k] : []));
    if (mine.length > 0) {
      for (const k of mine) used.add(k);
      const more = mine.length > 1 ? ` (and ${mine.length - 1} more)` : '';
      out.push({ line, error: `bad YAML: ${errs[mine[0]!]!.message}${more}`, field: '(record)' });
      continue;
    }
    try {
      out.push({ line, value: item.toJS(doc) });
    } catch (e) {
      // A "billion laughs" or a self-referencing alias spoils only its record.
      const why = /alias count/i.test((e as Error).message)
        ? 'its aliases expand to too much data'
        : (e as Error).message;
      out.push({ line, error: `bad YAML: ${why}`, field: '(record)' });
    }
  }
  // Errors outside every record (e.g. bad indentation between items) still reach the user.
  errs.forEach((e, k) => {
    if (!used.has(k)) out.push({ line: e.line, error: `bad YAML: ${e.message}`, field: '(file)' });
  });
  return out.sort((a, b) => a.line - b.line);
}
