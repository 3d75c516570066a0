// CSV tasksets (RFC 4180): a header row names the fields; quoted cells may hold commas, quotes ("")
// and newlines, so a record's line is where its row starts. Cells holding JSON arrays / objects for
// structured fields (choices, tests, image, messages, metadata) are parsed as JSON.
import type { RawRecord } from './index.js';

export interface CsvRow {
  line: number;
  cells: string[];
  error?: string;
}

/** Split CSV text into rows; blank lines are skipped. */
export function parseCsv(text: string): CsvRow[] {
  const rows: CsvRow[] = [];
  const n = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  while (i < n) {
    const rowLine = line;
    const cells: string[] = [];
    let error: string | undefined;
    for (;;) {
      let cell = '';
      if (text[i] === '"') {
        i++;
        let closed = false;
        // Copy runs between quotes with slice (not char by char): quoted prompts are long.
        for (;;) {
          const q = text.indexOf('"', i);
          const end = q < 0 ? n : q;
          const chunk = text.slice(i, end);
          for (let k = chunk.indexOf('\n'); k >= 0; k = chunk.indexOf('\n', k + 1)) line++;
          cell += chunk;
          i = end;
          if (q < 0) break;
          if (text[q + 1] === '"') {
            cell += '"';
            i = q + 2;
            continue;
          }
          i = q + 1;
          closed = true;
          break;
        }
        if (!closed) error = 'unterminated quoted cell';
        // Text after a closing quote is kept (lenient), but reported.
        const start = i;
        while (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') i++;
        if (i > start) {
          error ??= 'characters after a closing quote';
          cell += text.slice(start, i);
        }
      } else {
        const start = i;
        while (i < n) {
          const c = text.charCodeAt(i);
          if (c === 44 || c === 10 || c === 13) break; // , \n \r
          i++;
        }
        cell = text.slice(start, i);
      }
      cells.push(cell);
      if (i < n && text[i] === ',') {
        i++;
        continue;
      }
      break;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') {
      i++;
      line++;
    }
    if (cells.length === 1 && cells[0] === '' && !error) continue; // blank line
    rows.push(error ? { line: rowLine, cells, error } : { line: rowLine, cells });
  }
  return rows;
}

const JSON_FIELDS = new Set(['choices', 'tests', 'image', 'messages', 'metadata']);
const NUMBER_FIELDS = new Set(['difficulty']);

export function readCsv(text: string): RawRecord[] {
  const rows = parseCsv(text);
  const out: RawRecord[] = [];
  const header = rows.shift();
  if (!header) return out;
  const names = header.cells.map((h) => h.trim());
  if (header.error) out.push({ line: header.line, error: `bad CSV header: ${header.error}`, field: '(header)' });
  const dup = names.find((h, k) => names.indexOf(h) !== k);
  if (dup !== undefined)
    return [{ line: header.line, error: `bad CSV header: column '${dup}' appears twice`, field: '(header)' }];
  for (const row of rows) {
    if (row.error) {
      out.push({ line: row.line, error: `bad CSV: ${row.error}`, field: '(row)' });
      continue;
    }
    if (row.cells.length !== names.length) {
      out.push({
        line: row.line,
        error: `bad CSV: expected ${names.length} cells (as in the header), got ${row.cells.length}`,
        field: '(row)',
      });
      continue;
    }
    const rec: Record<string, unknown> = {};
    let bad: RawRecord | undefined;
    names.forEach((name, k) => {
      const cell = row.cells[k]!;
      // Empty cells are absent fields, except the prompt: an empty prompt is its own error.
      if (cell === '' && name !== 'prompt') return;
      if (JSON_FIELDS.has(name)) {
        try {
          rec[name] = JSON.parse(cell);
        } catch {
          bad ??= {
            line: row.line,
            error: `expected a JSON value in this cell, got '${cell.slice(0, 40)}'`,
            field: name,
          };
        }
      } else if (NUMBER_FIELDS.has(name) && cell.trim() !== '' && Number.isFinite(Number(cell)))
        rec[name] = Number(cell);
      else rec[name] = cell;
    });
    out.push(bad ?? { line: row.line, value: rec });
  }
  return out;
}
