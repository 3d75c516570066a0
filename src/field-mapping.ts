// Which of a file's own fields stand for the task's prompt, answer (or an expert's response) and id:
// proposed from the field names (synonyms, typos) and, where the names say nothing, from the values
// of the first records (unique short tokens are ids, short scalars answers, long text responses).
// No vscode import: the config template, the diagnostics and the mapping command share it.
import { formatByExtension, isColumnar, readRecords } from '../backend/core/taskset-text/index.js';
import { readColumnar } from '../backend/core/taskset-columnar/index.js';
import { suggestField } from './field-synonyms.js';

export type MappingRole = 'task' | 'expert';
export type MappingTarget = 'prompt' | 'answer' | 'response' | 'id';

/** A file's own field names, as the config's `format:` writes them. */
export interface FileFormat {
  prompt_key?: string;
  response_key?: string;
  id_key?: string;
}

export interface FieldProposal {
  target: MappingTarget;
  /** The file's field. */
  key: string;
  /** `own`: the schema's name already; `name`: a name other datasets use; `values`: read from the values. */
  why: 'own' | 'name' | 'values';
}

export interface MappingProposal {
  role: MappingRole;
  fields: FieldProposal[];
  /** The `format:` mapping (undefined when the file uses the schema's names). */
  format?: FileFormat;
}

const FORMAT_KEY: Record<MappingTarget, keyof FileFormat> = {
  prompt: 'prompt_key',
  answer: 'response_key',
  response: 'response_key',
  id: 'id_key',
};

type Rec = Record<string, unknown>;

interface Stats {
  scalar: number; // share of records where it is a string or number
  avgLen: number; // mean length of its text
  words: number; // mean number of words
  unique: boolean; // every record has a distinct value
}

function statsOf(records: Rec[], key: string): Stats {
  const vals = records.map((r) => r[key]).filter((v) => v !== undefined && v !== null);
  const texts = vals.filter((v) => typeof v === 'string' || typeof v === 'number').map(String);
  const n = Math.max(1, vals.length);
  return {
    scalar: texts.length / Math.max(1, records.length),
    avgLen: texts.reduce((a, t) => a + t.length, 0) / Math.max(1, texts.length),
    words: texts.reduce((a, t) => a + t.split(/\s+/).filter(Boolean).length, 0) / Math.max(1, texts.length),
    unique: vals.length > 1 && new Set(texts).size === texts.length && texts.length === n,
  };
}

/** Field names of the records, in the order they first appear. */
export function fieldsOf(records: Rec[]): string[] {
  const out: string[] = [];
  for (const r of records) for (const k of Object.keys(r)) if (!out.includes(k)) out.push(k);
  return out;
}

/** What the values say a field is (the fallback when its name says nothing). */
function byValues(target: MappingTarget, records: Rec[], free: string[], promptKey?: string): string | undefined {
  const st = new Map(free.map((k) => [k, statsOf(records, k)]));
  const text = free.filter((k) => st.get(k)!.scalar >= 0.8);
  const longest = (ks: string[]) => [...ks].sort((a, b) => st.get(b)!.avgLen - st.get(a)!.avgLen)[0];
  const promptLen = promptKey ? statsOf(records, promptKey).avgLen : 0;
  switch (target) {
    case 'id':
      // Distinct short tokens without spaces (`m-17`, 17), named like an id if several are.
      return text
        .filter((k) => st.get(k)!.unique && st.get(k)!.words <= 1 && st.get(k)!.avgLen <= 40)
        .sort((a, b) => Number(/id$/i.test(b)) - Number(/id$/i.test(a)))[0];
    case 'prompt':
      return longest(text.filter((k) => st.get(k)!.words >= 3));
    case 'answer':
      // A short scalar: `42`, `B`, `x = 3`.
      return text
        .filter((k) => st.get(k)!.avgLen <= 32 && st.get(k)!.words <= 4)
        .sort((a, b) => st.get(a)!.avgLen - st.get(b)!.avgLen)[0];
    case 'response':
      // Worked text, at least a few words and not shorter than half the prompt.
      return longest(text.filter((k) => st.get(k)!.words >= 3 && st.get(k)!.avgLen >= promptLen / 2));
  }
}

/** Proposes the mapping of prompt, answer (or response) and id for a file's first records. */
export function proposeMapping(records: Rec[], role: MappingRole = 'task'): MappingProposal {
  const keys = fieldsOf(records);
  const has = (k: string) => records.some((r) => k in r);
  const used = new Set<string>();
  const fields: FieldProposal[] = [];
  // Names first for every target (a name is surer than values), then values for the rest.
  const targets: MappingTarget[] = role === 'task' ? ['prompt', 'answer', 'id'] : ['prompt', 'response'];
  const pending: MappingTarget[] = [];
  for (const t of targets) {
    if (has(t) || (t === 'prompt' && has('messages'))) {
      fields.push({ target: t, key: t === 'prompt' && !has('prompt') ? 'messages' : t, why: 'own' });
      used.add(t);
      continue;
    }
    const merged = Object.fromEntries(
      keys.filter((k) => !used.has(k)).map((k) => [k, records.find((r) => k in r)![k]]),
    );
    const k = suggestField(t, merged);
    if (k) {
      fields.push({ target: t, key: k, why: 'name' });
      used.add(k);
    } else pending.push(t);
  }
  // An expert's worked text is the longest field: take it before the prompt takes it.
  if (role === 'expert') pending.sort((a, b) => Number(b === 'response') - Number(a === 'response'));
  for (const t of pending) {
    if (records.length === 0) break;
    const prompt = fields.find((f) => f.target === 'prompt')?.key;
    const k = byValues(
      t,
      records,
      keys.filter((x) => !used.has(x)),
      prompt,
    );
    if (k) {
      fields.push({ target: t, key: k, why: 'values' });
      used.add(k);
    }
  }
  fields.sort((a, b) => targets.indexOf(a.target) - targets.indexOf(b.target));
  return { role, fields, format: formatOf(fields) };
}

/** The `format:` mapping of chosen fields (only those that differ from the schema's names). */
export function formatOf(fields: FieldProposal[]): FileFormat | undefined {
  const out: FileFormat = {};
  for (const f of fields) if (f.why !== 'own' && f.key !== f.target) out[FORMAT_KEY[f.target]] = f.key;
  return Object.keys(out).length ? out : undefined;
}

/** Worked text, not an answer: a few sentences on average, and no GSM8K `#### 42` final answer in it. */
function isWorkedText(records: Rec[], key: string): boolean {
  const vals = records.map((r) => r[key]).filter((v): v is string => typeof v === 'string');
  return vals.length > 0 && !vals.some((v) => v.includes('####')) && statsOf(records, key).words > 6;
}

/**
 * Task or expert file: named like demonstrations (`experts.jsonl`, `worked-solutions.jsonl`), or by
 * its shape: records with a prompt and a response-like field (`reference_output`, `completion`, long
 * worked text) and nothing that reads as a short answer.
 */
export function guessRole(path: string, records: Rec[]): MappingRole {
  const base = path.split(/[\\/]/).pop()!.toLowerCase();
  if (/expert|demo|sft|worked|solutions/.test(base)) return 'expert';
  const answer = proposeMapping(records, 'task').fields.find((f) => f.target === 'answer');
  const response = proposeMapping(records, 'expert').fields.find((f) => f.target === 'response');
  if (!response) return 'task';
  if (!answer) return 'expert';
  // Named a demonstration (`reference_output`), where only the values made it an answer: experts.
  if (answer.key === response.key && response.why === 'name' && answer.why === 'values') return 'expert';
  // One field both ways (`output`): worked text is a demonstration, a short value an answer.
  return answer.key === response.key && answer.key !== 'answer' && isWorkedText(records, answer.key)
    ? 'expert'
    : 'task';
}

/**
 * The first records of a taskset text in any format the backend reads (JSONL, JSON, YAML, CSV, by
 * the path's extension; the backend's own readers), bad records skipped, at most `max`.
 */
export function firstRecords(text: string, path: string, max = 20): Rec[] {
  const format = formatByExtension(path);
  if (!format) return [];
  const out: Rec[] = [];
  for (const r of readRecords(text, format)) {
    if (out.length >= max) break;
    // A bad record: its diagnostic says so.
    if ('value' in r && r.value && typeof r.value === 'object' && !Array.isArray(r.value)) out.push(r.value as Rec);
  }
  return out;
}

/**
 * The first records of a taskset file: Parquet / Arrow read from the file (their first row group /
 * batch only), the text formats from `text` (an open editor's) or the file's head.
 */
export async function firstRecordsOfFile(path: string, text: () => string, max = 20): Promise<Rec[]> {
  const format = formatByExtension(path);
  if (!format || !isColumnar(format)) return firstRecords(text(), path, max);
  const out: Rec[] = [];
  try {
    for await (const r of readColumnar(path, format, new Map(), { limit: max }))
      if ('value' in r && r.value && typeof r.value === 'object') out.push(r.value as Rec);
  } catch {
    // Unreadable: no records (the file's diagnostic says why).
  }
  return out;
}

/** `problem -> prompt, final -> answer` (for messages and titles). */
export function describeMapping(fields: FieldProposal[]): string {
  return fields.map((f) => (f.key === f.target ? f.target : `${f.key} -> ${f.target}`)).join(', ');
}
