// A JSON taskset: an array of records, or an object with a `tasks` array. Scanned with a small
// tokenizer that tracks line numbers, so every element knows the line it starts on, and each element
// is parsed on its own: one malformed element is one error, the others still load.
import type { RawRecord } from './index.js';

const WS = new Set([' ', '\t', '\r', '\n', '\ufeff']);

export function readJsonArray(text: string): RawRecord[] {
  const out: RawRecord[] = [];
  const n = text.length;
  const stack: string[] = [];
  let i = 0;
  let line = 1;
  let target = -1; // stack depth directly inside the records array; -2 once it is closed
  let lastKey: string | null = null; // last string at depth 1 of a root object
  let tasksNext = false; // just read `"tasks":` at depth 1
  let elemStart = -1;
  let elemLine = 0;

  const flush = (end: number, closing: boolean): void => {
    if (elemStart < 0) {
      if (!closing) out.push({ line, error: 'bad JSON: empty element (stray comma)', field: '(record)' });
      return;
    }
    const src = text.slice(elemStart, end);
    try {
      out.push({ line: elemLine, value: JSON.parse(src) });
    } catch (e) {
      out.push({ line: elemLine, error: `bad JSON: ${(e as Error).message}`, field: '(record)' });
    }
    elemStart = -1;
  };

  while (i < n) {
    const c = text[i]!;
    if (c === '\n') {
      line++;
      i++;
      continue;
    }
    if (WS.has(c)) {
      i++;
      continue;
    }
    const depth = stack.length;
    const inTarget = depth === target;
    if (inTarget && elemStart < 0 && c !== ',' && c !== ']') {
      elemStart = i;
      elemLine = line;
    }
    if (depth === 0 && target === -1 && c !== '[' && c !== '{') {
      return [
        {
          line,
          error: `a JSON taskset is an array of records or an object with a 'tasks' array; found '${c}'`,
          field: '(file)',
        },
      ];
    }
    if (depth === 0 && target !== -1) {
      out.push({ line, error: `bad JSON: unexpected '${c}' after the end of the taskset`, field: '(file)' });
      return out;
    }
    if (c === '"') {
      const start = i;
      i++;
      while (i < n && text[i] !== '"') {
        if (text[i] === '\\') i++;
        if (text[i] === '\n') line++;
        i++;
      }
      i++;
      if (depth === 1 && stack[0] === '{' && target !== 1) {
        try {
          lastKey = JSON.parse(text.slice(start, i)) as string;
        } catch {
          lastKey = null;
        }
      }
      tasksNext = false;
      continue;
    }
    if (c === ':' && depth === 1 && stack[0] === '{') {
      tasksNext = lastKey === 'tasks' && target === -1;
      i++;
      continue;
    }
    if (c === '[' || c === '{') {
      if (depth === 0 && c === '[') target = 1;
      else if (depth === 1 && tasksNext && c === '[') target = 2;
      tasksNext = false;
      stack.push(c);
      i++;
      continue;
    }
    if (c === ']' || c === '}') {
      const open = stack.pop();
      if (open === undefined || (open === '[') !== (c === ']')) {
        if (elemStart >= 0) flush(i, true);
        out.push({ line, error: `bad JSON: unexpected '${c}'`, field: '(file)' });
        return out;
      }
      if (inTarget) {
        flush(i, true);
        target = -2;
      }
      i++;
      continue;
    }
    if (c === ',' && inTarget) {
      flush(i, false);
      i++;
      continue;
    }
    if (depth === 1) tasksNext = false;
    i++;
  }
  if (stack.length > 0) {
    if (target > 0 && stack.length >= target && elemStart >= 0) {
      out.push({ line: elemLine, error: 'bad JSON: unexpected end of file inside this record', field: '(record)' });
    }
    out.push({
      line,
      error: `bad JSON: unexpected end of file (unclosed '${stack[stack.length - 1]}')`,
      field: '(file)',
    });
  } else if (target === -1) {
    out.push({
      line: 1,
      error: "a JSON taskset is an array of records or an object with a 'tasks' array",
      field: '(file)',
    });
  }
  return out;
}
