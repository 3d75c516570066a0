// A taskset's bytes as text, with invalid UTF-8 reported instead of silently becoming U+FFFD in ids
// and prompts. Line formats (JSONL, CSV): each line with invalid bytes is an error at its line and is
// left out (blanked, so line numbers stay), the other records are kept. JSON / YAML cannot lose a
// line: the file is refused at the first bad line.
import type { TaskRecordError, TasksetFormat } from './types.js';

const strict = new TextDecoder('utf-8', { fatal: true });

export function decodeTaskset(
  bytes: Uint8Array,
  file: string,
  format: TasksetFormat,
): { text: string; errors: TaskRecordError[] } {
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
