// Training text from taskset files: the prompt / answer / response-like string fields of .jsonl and
// .json records, raw text of anything else. A bad JSONL line is reported (file:line) and skipped;
// the lines around it are kept.
import { extname } from 'node:path';
import { InputError } from '../../core/errors.js';
import { MAX_BYTES, readRegularFile } from '../../core/regular-file.js';

/** Fields whose string values are text a model reads or writes (also searched inside arrays and objects). */
export const TEXT_FIELDS = new Set([
  'prompt',
  'question',
  'query',
  'problem',
  'instruction',
  'input',
  'system',
  'context',
  'answer',
  'response',
  'solution',
  'output',
  'completion',
  'reference',
  'target',
  'chosen',
  'rejected',
  'choices',
  'messages',
  'content',
  'text',
]);

export interface CorpusFile {
  texts: string[];
  /** Problems found (bad lines); the rest of the file was still read. */
  problems: InputError[];
}

/** Strings under text fields of a record (recursing through arrays and nested objects). */
export function recordTexts(value: unknown, out: string[] = [], underTextField = false): string[] {
  if (typeof value === 'string') {
    if (underTextField && value.length > 0) out.push(value);
  } else if (Array.isArray(value)) {
    for (const v of value) recordTexts(v, out, underTextField);
  } else if (typeof value === 'object' && value !== null) {
    for (const [k, v] of Object.entries(value)) recordTexts(v, out, TEXT_FIELDS.has(k));
  }
  return out;
}

export function readCorpusFile(file: string): CorpusFile {
  let raw: string;
  try {
    raw = readRegularFile(file, 'utf8', MAX_BYTES.taskset);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`cannot read: ${e instanceof Error ? e.message : String(e)}`, { file });
  }
  const ext = extname(file).toLowerCase();
  if (ext === '.jsonl') {
    const texts: string[] = [];
    const problems: InputError[] = [];
    raw.split('\n').forEach((line, i) => {
      if (line.trim() === '') return;
      try {
        recordTexts(JSON.parse(line), texts);
      } catch (e) {
        problems.push(
          new InputError(`not valid JSON: ${e instanceof Error ? e.message : String(e)}`, { file, line: i + 1 }),
        );
      }
    });
    return { texts, problems };
  }
  if (ext === '.json') {
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (e) {
      throw new InputError(`not valid JSON: ${e instanceof Error ? e.message : String(e)}`, { file });
    }
    // One record, an array of records, or an object holding them under any key.
    return { texts: recordTexts(json), problems: [] };
  }
  return { texts: raw.length > 0 ? [raw] : [], problems: [] };
}
