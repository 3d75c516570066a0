// Writes a file's field mapping into a run config (`taskset.format`, `eval.format`,
// `experts.format`) with the config's comments and layout kept. No vscode import (tested plainly).
import { dirname, resolve } from 'node:path';
import { parseDocument, isMap } from 'yaml';
import type { FileFormat } from './field-mapping.js';

export type ConfigSection = 'taskset' | 'eval' | 'experts';
const SECTIONS: ConfigSection[] = ['taskset', 'eval', 'experts'];

/** The sections of a config whose `path` names `file` (paths are relative to the config). */
export function sectionsNaming(configPath: string, text: string, file: string): ConfigSection[] {
  const doc = parseDocument(text);
  if (doc.errors.length) return [];
  const out: ConfigSection[] = [];
  for (const s of SECTIONS) {
    const p = doc.getIn([s, 'path']);
    if (typeof p === 'string' && p && resolve(dirname(configPath), p) === file) out.push(s);
  }
  return out;
}

/**
 * The config text with `section.format` set to `format` (the keys it names replaced, others kept;
 * `path` set when given, for a section that did not name the file, with `split` for a dataset folder).
 * Throws on YAML the user must fix first.
 */
export function withFormat(
  text: string,
  section: ConfigSection,
  format: FileFormat,
  path?: string,
  split?: string,
): string {
  const doc = parseDocument(text);
  if (doc.errors.length)
    throw new Error(`the config does not parse (${doc.errors[0]!.message.split('\n')[0]}): fix it first`);
  if (path !== undefined) {
    const node = doc.get(section);
    // `taskset: { builtin: ... }` and a held-out share are not file readings: the section becomes the file.
    if (isMap(node)) for (const k of ['builtin', 'holdout']) node.delete(k);
    doc.setIn([section, 'path'], path);
    // A dataset folder's split; a file has none (a split left from a folder before would be refused).
    if (split !== undefined) doc.setIn([section, 'split'], split);
    else if (isMap(node)) node.delete('split');
  }
  for (const [k, v] of Object.entries(format)) if (v) doc.setIn([section, 'format', k], v);
  const fmt = doc.getIn([section, 'format']);
  if (isMap(fmt)) fmt.flow = true;
  return doc.toString();
}
