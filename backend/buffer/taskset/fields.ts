// Field mapping for data from elsewhere (the reference framework's `format: {prompt_key, ...}`):
// a record's own names are renamed to the task schema's before validation, so a file with
// `question` / `answer` / `qid` loads as it is. For expert data `response_key` names the
// demonstration; for tasks it names the reference answer. GSM8K-style answers (`steps ... #### 42`)
// keep the text after the last `####` as the answer and the whole solution in metadata.solution.

/** Keys as configs write them (snake_case, like the reference framework). */
export interface FieldMapping {
  prompt_key?: string;
  /** Tasks: the reference answer; expert records: the demonstration response. */
  response_key?: string;
  id_key?: string;
  system_prompt_key?: string;
  /** Code tasks: the test cases. */
  tests_key?: string;
  /** Vision tasks: the image ({width, height, rgb}). */
  image_key?: string;
  /** A task's own reward function name (else workflow.reward). */
  reward_key?: string;
}

export type RecordRole = 'task' | 'expert';

/** Schema field each mapping key fills; experts put the response under `response`. */
function target(key: keyof FieldMapping, role: RecordRole): string {
  switch (key) {
    case 'prompt_key':
      return 'prompt';
    case 'response_key':
      return role === 'expert' ? 'response' : 'answer';
    case 'id_key':
      return 'id';
    case 'system_prompt_key':
      return 'system_prompt';
    case 'tests_key':
      return 'tests';
    case 'image_key':
      return 'image';
    case 'reward_key':
      return 'reward';
  }
}

export const MAPPING_KEYS: (keyof FieldMapping)[] = [
  'prompt_key',
  'response_key',
  'id_key',
  'system_prompt_key',
  'tests_key',
  'image_key',
  'reward_key',
];

/** `#### 42` at the end of a worked solution (GSM8K): the final answer, else null. */
export function finalHashAnswer(s: string): string | null {
  const at = s.lastIndexOf('####');
  if (at < 0) return null;
  const v = s.slice(at + 4).trim();
  return v === '' ? null : v;
}

/**
 * Rename a raw record's fields to the schema's. Non-objects pass through (the validator reports
 * them). `line` makes an id for records without one when `defaultIds` is set (`L<line>`, after
 * `idPrefix` where a taskset is several files: a dataset's shards each start at row 1).
 */
export function mapRecord(
  value: unknown,
  mapping: FieldMapping,
  role: RecordRole,
  line: number,
  defaultIds: boolean,
  idPrefix = '',
): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const src = value as Record<string, unknown>;
  const out: Record<string, unknown> = { ...src };
  for (const k of MAPPING_KEYS) {
    const from = mapping[k];
    if (!from) continue;
    const to = target(k, role);
    if (from === to) continue;
    // A path into a nested value (`messages[0].content`) leaves its column in place (metadata).
    const v = fieldValue(src, from);
    if (from in src) delete out[from];
    if (v !== undefined) out[to] = v;
  }
  if (defaultIds && out.id === undefined) out.id = `${idPrefix}L${line}`;
  chatColumn(out, role);
  if (typeof out.system_prompt === 'string' && typeof out.prompt === 'string' && out.messages === undefined) {
    out.messages = [
      { role: 'system', content: out.system_prompt },
      { role: 'user', content: out.prompt },
    ];
    delete out.system_prompt;
  }
  if (role === 'expert' && out.answer === undefined && typeof out.response === 'string') {
    // A demonstration's final answer is its reference too (math_answer reads task.answer).
    const fin = finalHashAnswer(out.response);
    if (fin !== null) out.answer = fin;
  }
  if (typeof out.answer === 'string') {
    const fin = finalHashAnswer(out.answer);
    if (fin !== null) {
      out.solution ??= out.answer;
      out.answer = fin;
    }
  }
  return out;
}

/**
 * A format key's value: the field of that name, else a path into nested values (`messages[0].content`,
 * `meta.question`, `turns[-1].text` counting from the end), as Parquet / Arrow lists and structs give them.
 */
export function fieldValue(src: Record<string, unknown>, key: string): unknown {
  if (key in src) return src[key];
  const parts = key.match(/[^.[\]]+|\[-?\d+\]/g);
  if (!parts) return undefined;
  let cur: unknown = src;
  for (const p of parts) {
    if (cur === null || typeof cur !== 'object') return undefined;
    if (p.startsWith('[')) {
      if (!Array.isArray(cur)) return undefined;
      const i = Number(p.slice(1, -1));
      cur = cur[i < 0 ? cur.length + i : i];
    } else cur = (cur as Record<string, unknown>)[p];
  }
  return cur;
}

type Turn = { role: string; content: unknown };

/**
 * A chat column (`messages: [{role, content}...]`, the hub's chat datasets) as a task: the user turn(s)
 * before the first assistant turn are the prompt, the last assistant turn the reference answer (an
 * expert's response); the turns before that stay the task's messages (a system prompt with them),
 * so the reference never reaches the model. Fields the mapping already set are kept.
 */
function chatColumn(out: Record<string, unknown>, role: RecordRole): void {
  const msgs = out.messages;
  if (!Array.isArray(msgs) || msgs.length === 0) return;
  if (!msgs.every((m) => typeof m === 'object' && m !== null && typeof (m as Turn).role === 'string')) return;
  const turns = msgs as Turn[];
  let last = turns.length - 1;
  while (last >= 0 && turns[last]!.role !== 'assistant') last--;
  if (last < 0) return;
  const firstA = turns.findIndex((m) => m.role === 'assistant');
  const users = turns.slice(0, firstA).filter((m) => m.role === 'user' && typeof m.content === 'string');
  if (out.prompt === undefined && users.length) out.prompt = users.map((m) => m.content).join('\n\n');
  const to = role === 'expert' ? 'response' : 'answer';
  if (out[to] === undefined) out[to] = turns[last]!.content;
  const before = turns.slice(0, last);
  // One user turn is the prompt itself; a system prompt or earlier turns stay as messages.
  if (before.length === 1 && before[0]!.role === 'user') delete out.messages;
  else out.messages = before;
}

/** A schema field name back to the user's own key, for error messages (`question`, not `prompt`). */
export function userField(field: string, mapping: FieldMapping, role: RecordRole): string {
  for (const k of MAPPING_KEYS) {
    const to = target(k, role);
    const from = mapping[k];
    if (from && (field === to || field.startsWith(`${to}.`) || field.startsWith(`${to}[`)))
      return from + field.slice(to.length);
  }
  return field;
}
