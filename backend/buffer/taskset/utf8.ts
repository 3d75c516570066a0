// A taskset's bytes as text, with invalid UTF-8 reported instead of silently becoming U+FFFD in ids
// and prompts. Line formats (JSONL, CSV): each line with invalid bytes is an error at its line and is
// left out (blanked, so line numbers stay), the other records are kept. JSON / YAML cannot lose a
// line: the file is refused at the first bad line. A UTF-16 or binary file is named as such (its
// NUL bytes), not as "invalid UTF-8" at every line.
import type { TaskRecordError, TasksetFormat } from './types.js';
import { InputError } from '../../core/errors.js';

const strict = new TextDecoder('utf-8', { fatal: true });

export function decodeTaskset(
  bytes: Uint8Array,
  file: string,
  format: TasksetFormat,
): { text: string; errors: TaskRecordError[] } {
  const kind = notUtf8Text(bytes);
  if (kind) throw new InputError(`${kind}: not a text taskset in UTF-8`, { file });
  try {
    return { text: strict.decode(bytes), errors: [] };
  } catch {
    // Fall through: find the lines.
  }
  const errors: TaskRecordError[] = [];
  const lines: string[] = [];
  let start = 0;
  for (let line = 1; start <= bytes.length; line++) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) end = bytes.length;
    const part = bytes.subarray(start, end);
    try {
      lines.push(strict.decode(part));
    } catch {
      const message = `invalid UTF-8 in this line${format === 'jsonl' || format === 'csv' ? ' (record skipped)' : ' (the file is not read)'}`;
      if (format !== 'jsonl' && format !== 'csv')
        throw Object.assign(new Error(`${file}:${line}: ${message}`), { line });
      errors.push({ file, line, field: '(record)', message });
      lines.push('');
    }
    start = end + 1;
  }
  return { text: lines.join('\n'), errors };
}

/** 'is UTF-16 (...)' or 'is binary (...)' when the start of BYTES says so; undefined for anything that may be UTF-8 text. */
export function notUtf8Text(bytes: Uint8Array): string | undefined {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return 'is UTF-16 (little-endian byte order mark): save it as UTF-8';
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return 'is UTF-16 (big-endian byte order mark): save it as UTF-8';
  const head = bytes.subarray(0, 4096);
  let nul = 0;
  let nulEven = 0;
  for (let i = 0; i < head.length; i++)
    if (head[i] === 0) {
      nul++;
      if (i % 2 === 0) nulEven++;
    }
  if (nul === 0) return undefined;
  // ASCII text in UTF-16: every other byte is NUL, all at even (big-endian) or all at odd (little-endian) offsets.
  const half = head.length / 2;
  if (nul >= half * 0.8 && (nulEven === nul || nulEven === 0))
    return `is UTF-16 (${nulEven ? 'big' : 'little'}-endian, no byte order mark: every other byte is NUL): save it as UTF-8`;
  if (nul > head.length * 0.1) return `is binary (${nul} NUL bytes in its first ${head.length})`;
  return undefined;
}
