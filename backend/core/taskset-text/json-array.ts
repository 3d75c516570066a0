// A JSON taskset: an array of records, or an object with a `tasks` array. Read with jsonc-parser's
// error-tolerant parser (a tree with offsets): every element knows the line it starts on, and a
// syntax error spoils only the element it falls in (one error); the others still load.
import { type Node, type ParseError, parseTree, printParseErrorCode } from 'jsonc-parser';
import type { RawRecord } from './index.js';

/** `ValueExpected` -> `value expected`. */
function words(e: ParseError): string {
  return printParseErrorCode(e.error)
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase();
}

export function readJsonArray(text: string): RawRecord[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  const lineAt = (offset: number): number => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const where = (offset: number) => {
    const line = lineAt(offset);
    return { line, col: offset - starts[line - 1]! + 1 };
  };

  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { disallowComments: true, allowTrailingComma: false });
  const shape = "a JSON taskset is an array of records or an object with a 'tasks' array";
  if (!root) {
    const first = errors[0];
    return [{ line: first ? lineAt(first.offset) : 1, error: shape, field: '(file)' }];
  }
  let list: Node | undefined;
  if (root.type === 'array') list = root;
  else if (root.type === 'object') {
    const prop = root.children?.find((p) => p.children?.[0]?.value === 'tasks');
    if (prop?.children?.[1]?.type === 'array') list = prop.children[1];
  }
  if (!list) {
    const c = text.slice(root.offset, root.offset + 1);
    return [
      { line: lineAt(root.offset), error: root.type === 'object' ? shape : `${shape}; found '${c}'`, field: '(file)' },
    ];
  }

  const out: RawRecord[] = [];
  const elems = list.children ?? [];
  const listEnd = list.offset + list.length;
  // Each error belongs to the element whose text holds it (its end included: a record cut off by
  // the end of the file), else to the array (a stray comma) or the file (text after the taskset).
  const byElem = new Map<Node, ParseError>();
  const loose: ParseError[] = [];
  for (const e of errors) {
    const el = elems.find((n) => e.offset >= n.offset && e.offset <= n.offset + n.length);
    if (el && !byElem.has(el)) byElem.set(el, e);
    else if (!el) loose.push(e);
  }
  for (const el of elems) {
    const line = lineAt(el.offset);
    const e = byElem.get(el);
    if (e) {
      const at = where(e.offset);
      const message =
        e.offset >= text.length
          ? 'bad JSON: unexpected end of file inside this record'
          : `bad JSON: ${words(e)} at line ${at.line}, column ${at.col}`;
      out.push({ line, error: message, field: '(record)' });
      continue;
    }
    try {
      out.push({ line, value: JSON.parse(text.slice(el.offset, el.offset + el.length)) });
    } catch (err) {
      out.push({ line, error: `bad JSON: ${(err as Error).message}`, field: '(record)' });
    }
  }
  for (const e of loose) {
    const at = where(e.offset);
    const inList = e.offset > list.offset && e.offset < listEnd;
    if (e.offset >= text.length)
      out.push({
        line: at.line,
        error: 'bad JSON: unexpected end of file (the taskset is not closed)',
        field: '(file)',
      });
    else if (inList)
      out.push({
        line: at.line,
        error: `bad JSON: ${words(e)} at column ${at.col}${text[e.offset] === ',' ? ' (an empty element: a stray comma?)' : ''}`,
        field: '(record)',
      });
    else
      out.push({
        line: at.line,
        error:
          e.offset >= root.offset + root.length
            ? `bad JSON: unexpected '${text[e.offset]}' after the end of the taskset`
            : `bad JSON: ${words(e)} at column ${at.col}`,
        field: '(file)',
      });
  }
  return out.sort((a, b) => a.line - b.line);
}
