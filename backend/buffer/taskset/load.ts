// Load a taskset (JSONL, JSON, YAML, CSV, Parquet, Arrow; or a dataset folder of split files, the
// hub cache's layout): every record is validated against its domain's schema; bad records become
// errors with file, line (a columnar file's row) and field, and the valid ones are kept.
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Task } from '../../core/types.js';
import { formatLocation } from '../../core/errors.js';
import { checkRecord, OWN_COLUMN_FIELDS, recordKeysOf } from './schema.js';
import { mapRecord, userField, type FieldMapping } from './fields.js';
import type { LoadOptions, LoadResult, TaskRecordError } from './types.js';
import { formatOf, isColumnar, readRecords, type RawRecord } from '../../core/taskset-text/index.js';
import {
  bigNoteLines,
  datasetFolder,
  readColumnar,
  splitFiles,
  type BigNotes,
} from '../../core/taskset-columnar/index.js';
import { decodeTaskset } from './utf8.js';
import { imageCell } from './png.js';
import { assertRegularFile, MAX_BYTES, readRegularFileAsync } from '../../core/regular-file.js';

export { formatOf, TASKSET_EXTENSIONS } from '../../core/taskset-text/index.js';

type Value = { line: number; file: string; value: unknown };

/**
 * Validates raw records (a columnar file streams through it), over one or more files. Records are
 * read and mapped as they come, and checked at the end: a column of the user's own (ownColumns) is
 * known only once every value of it has been seen.
 */
class RecordChecker {
  private pending: Value[] = [];
  private tasks: Task[] = [];
  private lines: number[] = [];
  private files: string[] = [];
  private errors = new Map<string, TaskRecordError[]>();
  private first = new Map<string, { file: string; line: number }>();
  private records = 0;
  private readonly fields;
  private readonly role;
  private readonly mapped: boolean;

  constructor(
    private readonly taskset: string,
    private readonly opts: LoadOptions,
  ) {
    this.fields = opts.fields ?? {};
    this.role = opts.role ?? 'task';
    this.mapped = !!opts.fields || this.role === 'expert' || !!opts.defaultIds;
  }

  private error(e: TaskRecordError): void {
    (this.errors.get(e.file) ?? this.errors.set(e.file, []).get(e.file)!).push(e);
  }

  /** Errors found before the records (undecodable bytes): they count as records. */
  addErrors(errs: TaskRecordError[]): void {
    this.records += errs.length;
    for (const e of errs) this.error(e);
  }

  /** Where a taskset is several files, the ids numbered by row are prefixed with the file's name. */
  idPrefix = '';

  add(r: RawRecord, file: string): void {
    const { fields, role } = this;
    if ('error' in r) {
      if (r.field !== '(file)' && r.field !== '(header)' && r.field !== '(row group)') this.records++;
      this.error({ file, line: r.line, field: r.field ?? '(record)', message: r.error });
      return;
    }
    this.records++;
    // A chat column is read as a run reads it (the last assistant turn is the answer) even unmapped.
    const chat = Array.isArray((r.value as { messages?: unknown } | null)?.messages);
    const value =
      this.mapped || chat ? mapRecord(r.value, fields, role, r.line, !!this.opts.defaultIds, this.idPrefix) : r.value;
    // An image cell of a dataset (`{bytes, path}`, PNG bytes) becomes the vision task's {width, height, rgb}.
    const img = (value as { image?: unknown } | null)?.image;
    if (img instanceof Uint8Array || (img && typeof img === 'object' && 'bytes' in img)) {
      try {
        (value as { image?: unknown }).image = imageCell(img);
      } catch (e) {
        this.error({ file, line: r.line, field: userField('image', fields, role), message: (e as Error).message });
        return;
      }
    }
    this.pending.push({ line: r.line, file, value });
  }

  /** The checks of one mapped record; `ownKeys`: the user's own columns (kept in metadata). */
  private check({ line, file, value }: Value, ownKeys: Set<string>): void {
    const { fields, role } = this;
    // Demonstrations need no reference answer unless their domain says so.
    const c = checkRecord(value, this.opts.domain ?? (role === 'expert' ? 'text' : 'math'), this.taskset, ownKeys);
    if (!('task' in c)) {
      const field = userField(c.field, fields, role);
      this.error({ file, line, field, message: c.message + reservedHint(c.field, c.message, fields) });
      return;
    }
    if (role === 'expert') {
      const resp = c.task.metadata?.response;
      if (typeof resp !== 'string' || resp.trim() === '') {
        this.error({
          file,
          line,
          field: fields.response_key ?? 'response',
          message: resp === undefined ? 'required field is missing (the demonstration)' : 'expected a non-empty string',
        });
        return;
      }
    }
    const seen = this.first.get(c.task.id);
    if (seen !== undefined) {
      const at = seen.file === file ? `line ${seen.line}` : `${seen.file}:${seen.line}`;
      this.error({ file, line, field: 'id', message: `duplicate id '${c.task.id}' (first at ${at})` });
      return;
    }
    this.first.set(c.task.id, { file, line });
    this.tasks.push(c.task);
    this.lines.push(line);
    this.files.push(file);
  }

  result(file: string, notes: string[] = []): LoadResult {
    const own = ownColumns(this.pending);
    const warnings = [...own.values()].map((o) => ({ file: o.file, line: o.line, field: o.key, message: o.message }));
    const ownKeys = new Set(own.keys());
    for (const v of this.pending) this.check(v, ownKeys);
    this.pending = [];
    // Each file's errors in line order, the files in the order they were read.
    const errors = [...this.errors.values()].flatMap((es) => es.sort((a, b) => a.line - b.line));
    const several = this.files.some((f) => f !== file);
    return {
      file,
      tasks: this.tasks,
      lines: this.lines,
      ...(several ? { recordFiles: this.files } : {}),
      errors,
      records: this.records,
      ...(notes.length ? { notes } : {}),
      ...(warnings.length ? { warnings } : {}),
    };
  }
}

/**
 * Columns named like an optional schema field (`difficulty`) none of whose values fits it
 * (`"easy"`): the user's own, kept in metadata instead of failing every record. A column where some
 * values fit is the field, and the others are errors at their lines (a typo in the user's data).
 */
function ownColumns(values: Value[]): Map<string, { key: string; file: string; line: number; message: string }> {
  const out = new Map<string, { key: string; file: string; line: number; message: string }>();
  for (const [field, spec] of Object.entries(OWN_COLUMN_FIELDS)) {
    for (const key of recordKeysOf(field)) {
      let first: Value | undefined;
      let n = 0;
      let fits = false;
      for (const r of values) {
        if (!r.value || typeof r.value !== 'object' || !(key in r.value)) continue;
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
        file: first.file,
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

/** Parse and validate taskset text; `file` names it in errors and picks the format by extension. */
export function parseTaskset(text: string, file: string, opts: LoadOptions = {}): LoadResult {
  const c = new RecordChecker(opts.taskset ?? file, opts);
  for (const r of readRecords(text, opts.format ?? formatOf(file))) c.add(r, file);
  return c.result(file);
}

/** parseTaskset over a file's bytes: lines with invalid UTF-8 are errors at their line (utf8.ts), not U+FFFD. */
export function parseTasksetBytes(bytes: Uint8Array, file: string, opts: LoadOptions = {}): LoadResult {
  const c = new RecordChecker(opts.taskset ?? file, opts);
  checkBytes(c, bytes, file, opts);
  return c.result(file);
}

function checkBytes(c: RecordChecker, bytes: Uint8Array, file: string, opts: LoadOptions): void {
  const format = opts.format ?? formatOf(file);
  const d = decodeTaskset(bytes, file, format);
  c.addErrors(d.errors);
  for (const r of readRecords(d.text, format)) c.add(r, file);
}

/**
 * The files a taskset path stands for: the file itself, or the `split` of a dataset folder (a hub
 * cache entry or a folder of split shards; without `split`, its only one or the first of
 * `opts.defaultSplits` it has).
 */
export async function tasksetFiles(path: string, opts: LoadOptions = {}): Promise<{ files: string[]; split?: string }> {
  if ((await stat(path)).isDirectory()) {
    const s = splitFiles(datasetFolder(path), opts.split, opts.defaultSplits ?? ['train']);
    return { files: s.files, split: s.split };
  }
  if (opts.split !== undefined)
    throw new Error(`split '${opts.split}' chooses the split files of a dataset folder; ${path} is one file`);
  return { files: [path] };
}

/** Load a taskset file or dataset folder; Parquet / Arrow files stream a row group or batch at a time. */
export async function loadTaskset(path: string, opts: LoadOptions = {}): Promise<LoadResult> {
  const { files } = await tasksetFiles(path, opts);
  const c = new RecordChecker(opts.taskset ?? path, opts);
  const notes: BigNotes = new Map();
  const said: string[] = [];
  for (const file of files) {
    if (files.length > 1) c.idPrefix = `${basename(file).replace(/\.[^.]+$/, '')}:`;
    // A FIFO or a device is refused unopened, before anything else is said of it (regular-file.ts).
    assertRegularFile(file);
    const format = opts.format ?? formatOf(file);
    if (isColumnar(format)) {
      // Read a row group at a time: no size cap.
      for await (const r of readColumnar(file, format, notes)) c.add(r, file);
      said.push(...bigNoteLines(file, notes));
      notes.clear();
    } else checkBytes(c, await readRegularFileAsync(file, MAX_BYTES.taskset), file, opts);
  }
  return c.result(path, said);
}

/** `FILE:LINE: field 'X': message` */
export function formatTaskError(e: TaskRecordError): string {
  return formatLocation({ file: e.file, line: e.line, field: e.field }) + e.message;
}
