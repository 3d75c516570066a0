// Experiences from a Parquet or Arrow file (a buffer export converted by other tools, a dataset of
// rollouts): one row per experience, streamed a row group / batch at a time, each row checked as a
// JSONL line is (parseExperience) and named by FILE:ROW when bad. A null cell is a field left out
// (a columnar file has every column in every row).
import { InputError } from '../../core/errors.js';
import type { Experience } from '../../core/types.js';
import { readColumnar } from '../../core/taskset-columnar/index.js';
import { parseExperience } from './validate.js';

export async function* readColumnarExperiences(
  file: string,
  format: 'parquet' | 'arrow',
): AsyncGenerator<Experience | InputError> {
  for await (const r of readColumnar(file, format, new Map())) {
    if ('error' in r) {
      yield new InputError(r.error, { file, line: r.line });
      continue;
    }
    const row: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r.value as Record<string, unknown>)) if (v !== null) row[k] = v;
    try {
      yield parseExperience(row, { file, line: r.line });
    } catch (e) {
      if (e instanceof InputError) yield e;
      else throw e;
    }
  }
}
