// Load a taskset file (JSONL, JSON, YAML, CSV): every record is validated against its domain's schema;
// bad records become errors with file, line and field, and the valid ones are kept.
import { readFile } from 'node:fs/promises';
import type { Task } from '../../core/types.js';
import { formatLocation } from '../../core/errors.js';
import { checkRecord, OWN_COLUMN_FIELDS, recordKeysOf } from './schema.js';
import { mapRecord, userField, type FieldMapping } from './fields.js';
import type { LoadOptions, LoadResult, TaskRecordError } from './types.js';
import { formatOf, readRecords } from '../../core/taskset-text/index.js';
import { decodeTaskset } from './utf8.js';

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
  const values = raws.map((r) =>
    'error' in r
      ? r
      : { line: r.line, value: mapped ? mapRecord(r.value, fields, role, r.line, !!opts.defaultIds) : r.value },
  );
  const own = ownColumns(values);
  const warnings = [...own.values()].map((o) => ({ file, line: o.line, field: o.key, message: o.message }));
  const ownKeys = new Set(own.keys());
  for (const r of values) {
    if ('error' in r) {
      if (r.field !== '(file)' && r.field !== '(header)') records++;
      errors.push({ file, line: r.line, field: r.field ?? '(record)', message: r.error });
      continue;
    }
    records++;
    // Demonstrations need no reference answer unless their domain says so.
    const c = checkRecord(r.value, opts.domain ?? (role === 'expert' ? 'text' : 'math'), taskset, ownKeys);
    if (!('task' in c)) {
      const field = userField(c.field, fields, role);
      errors.push({ file, line: r.line, field, message: c.message + reservedHint(c.field, c.message, fields) });
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
  return { file, tasks, lines, errors, records, ...(warnings.length ? { warnings } : {}) };
}

type Value = { line: number; value: unknown };

/**
 * Columns named like an optional schema field (`difficulty`) none of whose values fits it
 * (`"easy"`): the user's own, kept in metadata instead of failing every record. A column where some
 * values fit is the field, and the others are errors at their lines (a typo in the user's data).
 */
function ownColumns(
  values: (Value | { error: string })[],
): Map<string, { key: string; line: number; message: string }> {
  const out = new Map<string, { key: string; line: number; message: string }>();
  for (const [field, spec] of Object.entries(OWN_COLUMN_FIELDS)) {
    for (const key of recordKeysOf(field)) {
      let first: Value | undefined;
      let n = 0;
      let fits = false;
      for (const r of values) {
        if ('error' in r || !r.value || typeof r.value !== 'object' || !(key in r.value)) continue;
        const v = (r.value as Record<string, unknown>)[key];
        if (spec.fits.safeParse(v).success) {
          fits = true;
          break;
        }
        first ??= r;
        n++;
      }
      if (fits || !first) continue;
      const v = JSON.stringify((first.value as Record<string, unknown>)[key]) ?? 'undefined';
      out.set(key, {
        key,
        line: first.line,
        message: `holds ${v.length > 40 ? `${v.slice(0, 40)}…` : v}, not ${spec.what}: kept as your own column, in each task's metadata (${n} record${n === 1 ? '' : 's'}), not read as the ${field}. Rename the column to say it is yours (a quick fix does), or write values of that kind to use it as the ${field}`,
      });
    }
  }
  return out;
}

/** For an error in a field a user's column may be named like: what the field is and the way out. */
function reservedHint(field: string, message: string, mapping: FieldMapping): string {
  const named = [field, ...[...message.matchAll(/; also '([^']+)'/g)].map((m) => m[1]!)].map(
    (f) => f.split(/[.[]/)[0]!,
  );
  const mapped = new Set(Object.values(mapping));
  const root = named.find((f) => OWN_COLUMN_FIELDS[f] && !mapped.has(f));
  if (!root) return '';
  const key = root === 'entryPoint' ? 'entry_point' : root;
  return ` ('${key}' is read as ${OWN_COLUMN_FIELDS[root]!.what}; if the column is your own, rename it: a quick fix does)`;
}

export async function loadTaskset(file: string, opts: LoadOptions = {}): Promise<LoadResult> {
  return parseTasksetBytes(await readFile(file), file, opts);
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
