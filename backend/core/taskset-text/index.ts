// Taskset files as text -> raw records, one reader per format (JSONL, JSON, YAML, CSV), each with
// the line a record starts on. Pure (no fs): the backend's loader validates what they read, and the
// extension reads a file's first records with the same readers (Map Fields…, detected mappings).
import { extname } from 'node:path';
import { InputError } from '../errors.js';
import { readCsv } from './csv.js';
import { readJsonArray } from './json-array.js';
import { readJsonl } from './jsonl.js';
import { readYamlList } from './yaml-list.js';

/** A record as read from a file, before validation: its value, or why it could not be read. */
export type RawRecord = { line: number; value: unknown } | { line: number; error: string; field?: string };

/** Formats read as text (this folder's readers). */
export type TextFormat = 'jsonl' | 'json' | 'yaml' | 'csv';
/** Every format a taskset file can have; Parquet and Arrow are read by ../taskset-columnar (streamed). */
export type TasksetFormat = TextFormat | 'parquet' | 'arrow';

/** Whether a format is columnar (read from the file in row groups / batches, not as text). */
export function isColumnar(f: TasksetFormat): f is 'parquet' | 'arrow' {
  return f === 'parquet' || f === 'arrow';
}

const BY_EXT: Record<string, TasksetFormat> = {
  '.jsonl': 'jsonl',
  '.ndjson': 'jsonl',
  '.json': 'json',
  '.yaml': 'yaml',
  '.yml': 'yaml',
  '.csv': 'csv',
  '.parquet': 'parquet',
  '.arrow': 'arrow',
  '.feather': 'arrow',
  '.ipc': 'arrow',
};

export const TASKSET_EXTENSIONS = Object.keys(BY_EXT);

/** The format of a taskset file by its extension, or undefined for a file no reader takes. */
export function formatByExtension(file: string): TasksetFormat | undefined {
  return BY_EXT[extname(file).toLowerCase()];
}

export function formatOf(file: string): TasksetFormat {
  const f = formatByExtension(file);
  if (!f)
    throw new InputError(
      `${file}: unknown taskset format '${extname(file)}'; use one of ${TASKSET_EXTENSIONS.join(', ')}`,
    );
  return f;
}

const READERS: Record<TextFormat, (text: string) => RawRecord[]> = {
  jsonl: readJsonl,
  json: readJsonArray,
  yaml: readYamlList,
  csv: readCsv,
};

export function readRecords(text: string, format: TasksetFormat): RawRecord[] {
  if (isColumnar(format))
    return [{ line: 1, field: '(file)', error: `a ${format} file is binary: it is read from the file, not as text` }];
  return READERS[format](text);
}
