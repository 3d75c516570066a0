// Load a taskset file (JSONL, JSON, YAML, CSV): every record is validated against its domain's schema;
// bad records become errors with file, line and field, and the valid ones are kept.
import type { Task } from '../../core/types.js';
import { formatLocation } from '../../core/errors.js';
import { checkRecord } from './schema.js';
import { mapRecord, userField } from './fields.js';
import type { LoadOptions, LoadResult, TaskRecordError } from './types.js';
import { formatOf, readRecords } from '../../core/taskset-text/index.js';
import { decodeTaskset } from './utf8.js';
import { MAX_BYTES, readRegularFileAsync } from '../../core/regular-file.js';

export { formatOf, TASKSET_EXTENSIONS } from '../../core/taskset-text/index.js';

/** Parse and validate taskset text; `file` names it in errors and picks the format by extension. */
export function parseTaskset(text: string, file: string, opts: LoadOptions = {}): LoadResult {
  const raws = readRecords(text, opts.format ?? formatOf(file));
  const taskset = opts.taskset ?? file;
  const tasks: Task[] = [];
  const lines: number[] = [];
  const errors: TaskRecordError[] = [];
  const firstLine = new Map<string, number>();
  let records = 0;
  const fields = opts.fields ?? {};
  const role = opts.role ?? 'task';
  const mapped = !!opts.fields || role === 'expert' || !!opts.defaultIds;
  for (const r of raws) {
    if ('error' in r) {
      if (r.field !== '(file)' && r.field !== '(header)') records++;
      errors.push({ file, line: r.line, field: r.field ?? '(record)', message: r.error });
      continue;
    }
    records++;
    const value = mapped ? mapRecord(r.value, fields, role, r.line, !!opts.defaultIds) : r.value;
    // Demonstrations need no reference answer unless their domain says so.
    const c = checkRecord(value, opts.domain ?? (role === 'expert' ? 'text' : 'math'), taskset);
    if (!('task' in c)) {
      errors.push({ file, line: r.line, field: userField(c.field, fields, role), message: c.message });
      continue;
    }
    if (role === 'expert') {
      const resp = c.task.metadata?.response;
      if (typeof resp !== 'string' || resp.trim() === '') {
        errors.push({
          file,
          line: r.line,
          field: fields.response_key ?? 'response',
          message: resp === undefined ? 'required field is missing (the demonstration)' : 'expected a non-empty string',
        });
        continue;
      }
    }
    const seen = firstLine.get(c.task.id);
    if (seen !== undefined) {
      errors.push({ file, line: r.line, field: 'id', message: `duplicate id '${c.task.id}' (first at line ${seen})` });
      continue;
    }
    firstLine.set(c.task.id, r.line);
    tasks.push(c.task);
    lines.push(r.line);
  }
  errors.sort((a, b) => a.line - b.line);
  return { file, tasks, lines, errors, records };
}

/** Reads FILE off the main thread, refusing a FIFO, a device or a file over the size cap by name (regular-file.ts). */
export async function loadTaskset(file: string, opts: LoadOptions = {}): Promise<LoadResult> {
  return parseTasksetBytes(await readRegularFileAsync(file, MAX_BYTES.taskset), file, opts);
}

/** parseTaskset over a file's bytes: lines with invalid UTF-8 are errors at their line (utf8.ts), not U+FFFD. */
export function parseTasksetBytes(bytes: Uint8Array, file: string, opts: LoadOptions = {}): LoadResult {
  const d = decodeTaskset(bytes, file, opts.format ?? formatOf(file));
  const r = parseTaskset(d.text, file, opts);
  if (!d.errors.length) return r;
  return {
    ...r,
    records: r.records + d.errors.length,
    errors: [...d.errors, ...r.errors].sort((a, b) => a.line - b.line),
  };
}

/** `FILE:LINE: field 'X': message` */
export function formatTaskError(e: TaskRecordError): string {
  return formatLocation({ file: e.file, line: e.line, field: e.field }) + e.message;
}
