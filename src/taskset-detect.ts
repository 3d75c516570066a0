// Tasksets found by their content, not only their folder: a JSONL / JSON file anywhere in the
// workspace whose first records carry a prompt and an answer, response or id (by name or by value)
// is a taskset. Before a config maps such a file, it is validated with the mapping detected from
// those records, so one unmapped field does not bury the real problems under identical errors.
import { closeSync, openSync, readSync } from 'node:fs';
import type { TasksetReading } from '../backend/core/protocol.js';
import { describeMapping, firstRecords, guessRole, proposeMapping, type MappingProposal } from './field-mapping.js';

/** Files found by their content: also these extensions, in any folder but tool folders. */
export const CONTENT_GLOB = '**/*.{jsonl,json}';
export const CONTENT_EXCLUDE = '{**/node_modules/**,**/.rft/**,**/.git/**,**/.vscode/**,**/dist/**}';
const HEAD_BYTES = 64 * 1024;

/** The first bytes of a file (enough for its first records), or '' when unreadable. */
export function readHead(file: string, bytes = HEAD_BYTES): string {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const buf = Buffer.alloc(bytes);
    const n = readSync(fd, buf, 0, bytes, 0);
    const text = buf.subarray(0, n).toString('utf8');
    // A cut last line is no record.
    return n === bytes ? text.slice(0, text.lastIndexOf('\n') + 1) : text;
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The mapping the file's first records suggest (role, fields), or undefined for a file that holds no tasks. */
export function detectTaskset(file: string, text: string): MappingProposal | undefined {
  const records = firstRecords(text, file);
  if (!records.length) return undefined;
  // A buffer exported as JSONL (Export Buffer) holds experiences, not tasks: never listed as a taskset.
  if (records.every(isExperience)) return undefined;
  const role = guessRole(file, records);
  const p = proposeMapping(records, role);
  const prompt = p.fields.find((f) => f.target === 'prompt');
  // A prompt alone is any text file's field: it needs a second target too.
  return prompt && p.fields.length >= 2 ? p : undefined;
}

/** The reading a detected mapping gives `taskset/validate` (undefined when the file uses the schema's names as a task file). */
export function detectedReading(p: MappingProposal): TasksetReading | undefined {
  if (!p.format && p.role === 'task') return undefined;
  return { ...(p.format ? { format: p.format as Record<string, string> } : {}), role: p.role };
}

/** The Problems note on line 1 of a file read with a detected mapping. */
export function detectedNote(p: MappingProposal): string {
  return `Read as ${p.role === 'expert' ? 'expert demonstrations' : 'tasks'} with ${describeMapping(p.fields)} (detected from the first records; no run config maps this file yet). "RFT Studio: Map Fields…" writes the mapping into a config.`;
}

/** A record of an exported buffer: an experience with its token arrays, group and model version. */
function isExperience(r: Record<string, unknown>): boolean {
  return (
    Array.isArray(r.promptTokens) &&
    Array.isArray(r.responseTokens) &&
    typeof r.groupId === 'string' &&
    typeof r.modelVersion === 'number'
  );
}
