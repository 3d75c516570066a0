// Task schemas per domain (zod). A record is normalised into a Task: numbers in `id` / `answer`
// become strings, `entry_point` is read as `entryPoint`, unknown fields move into `metadata`.
// Validation yields the first problem of a record as {field, message}.
import { z } from 'zod';
import type { Domain, Task } from '../../core/types.js';

export const DOMAINS: readonly Domain[] = ['math', 'code', 'k12', 'vision', 'multiturn', 'text'];

const KNOWN = new Set([
  'id',
  'domain',
  'prompt',
  'messages',
  'answer',
  'choices',
  'entryPoint',
  'tests',
  'image',
  'difficulty',
  'metadata',
]);
const ALIASES: Record<string, string> = { entry_point: 'entryPoint' };

// Plain zod types on the hot path: zod 3 effects (transform / refine) cost ~10x a plain check, so
// number -> string, trimming and the empty-prompt check happen in `normalise` before the schema.
const SCALAR_TEXT = new Set(['id', 'answer']);
const id = z.string().min(1, 'id is empty');
const answer = z.string().min(1, 'answer is empty');
const prompt = z.string().min(1, 'prompt is empty');
const difficulty = z.number().min(0).max(1).optional();
const messages = z
  .array(z.object({ role: z.enum(['system', 'user', 'assistant', 'environment']), content: z.string() }))
  .optional();
const metadata = z.record(z.unknown()).optional();
const base = { id, prompt, difficulty, messages, metadata };

const testCase = z.object({
  args: z.array(z.unknown()),
  expected: z.unknown().refine((v) => v !== undefined, 'required field is missing'),
});

const image = z
  .object({
    width: z.number().int().positive(),
    height: z.number().int().positive(),
    rgb: z.array(z.number().int().min(0).max(255)),
  })
  .superRefine((im, ctx) => {
    if (im.rgb.length !== im.width * im.height * 3) {
      ctx.addIssue({
        code: 'custom',
        path: ['rgb'],
        message: `expected ${im.width * im.height * 3} values (width x height x 3), got ${im.rgb.length}`,
      });
    }
  });

const LETTERS = 'ABCDE';

export const domainSchemas: Record<Domain, z.ZodTypeAny> = {
  math: z.object({ ...base, answer }),
  text: z.object({ ...base, answer: answer.optional() }),
  code: z.object({
    ...base,
    entryPoint: z.string().regex(/^[A-Za-z_$][\w$]*$/, 'expected a function name'),
    tests: z.array(testCase).min(1, 'needs at least one test'),
    answer: answer.optional(),
  }),
  k12: z
    .object({ ...base, answer, choices: z.array(z.string().min(1, 'choice is empty')).min(2).max(5).optional() })
    .transform((t, ctx) => {
      if (!t.choices) return t;
      const a = t.answer;
      const letter = a.length === 1 ? LETTERS.indexOf(a.toUpperCase()) : -1;
      if (letter >= 0 && letter < t.choices.length) return { ...t, answer: LETTERS[letter]! };
      const k = t.choices.indexOf(a);
      if (k >= 0) return { ...t, answer: LETTERS[k]! };
      ctx.addIssue({
        code: 'custom',
        path: ['answer'],
        message: `expected a letter A-${LETTERS[t.choices.length - 1]} or one of the choices, got '${a}'`,
      });
      return z.NEVER;
    }),
  vision: z.object({ ...base, answer, image }),
  multiturn: z.object({ ...base, prompt: prompt.optional(), answer: answer.optional() }).superRefine((t, ctx) => {
    const env = t.metadata?.environment;
    if (t.prompt === undefined && t.messages === undefined && (typeof env !== 'string' || env === '')) {
      ctx.addIssue({
        code: 'custom',
        path: ['metadata', 'environment'],
        message: 'a multi-turn task needs an environment name (metadata.environment / environment) or a prompt',
      });
    }
  }),
};

/**
 * Optional fields of the schema a user's own column may be named like (`difficulty: "easy"`). A
 * column none of whose values fits the field is the user's own: it is kept in metadata under its
 * name (load.ts), not read as the field, and one warning says so; `what` is how the field is read.
 */
export const OWN_COLUMN_FIELDS: Record<string, { fits: z.ZodTypeAny; what: string }> = {
  difficulty: { fits: z.number().min(0).max(1), what: 'the task difficulty (a number from 0, easy, to 1, hard)' },
  domain: { fits: z.enum(DOMAINS as [Domain, ...Domain[]]), what: `the task domain (one of ${DOMAINS.join(', ')})` },
  choices: {
    fits: z.array(z.string().min(1)).min(2).max(5),
    what: 'the options of a choice question (a list of 2 to 5 strings)',
  },
  entryPoint: {
    fits: z.string().regex(/^[A-Za-z_$][\w$]*$/),
    what: 'the function name of a code task',
  },
  messages: { fits: messages.unwrap(), what: 'the chat of a task (a list of {role, content})' },
  metadata: { fits: z.record(z.unknown()), what: 'the task metadata (an object)' },
};

/** The record's key for a schema field (`entry_point` for entryPoint when the record spells it so). */
export function recordKeysOf(field: string): string[] {
  return [field, ...Object.entries(ALIASES).flatMap(([k, v]) => (v === field ? [k] : []))];
}

/** Numbers in id / answer become strings; id / answer are trimmed; a blank prompt becomes ''. */
function normalise(k: string, v: unknown): unknown {
  if (SCALAR_TEXT.has(k)) {
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
    return typeof v === 'string' ? v.trim() : v;
  }
  if (k === 'prompt' && typeof v === 'string' && v.trim() === '') return '';
  return v;
}

export type RecordCheck = { task: Task } | { field: string; message: string };

function fieldPath(path: (string | number)[]): string {
  return path.reduce<string>((s, p) => (typeof p === 'number' ? `${s}[${p}]` : s ? `${s}.${p}` : p), '') || '(record)';
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : typeof v;
}

function issueMessage(issue: z.ZodIssue): string {
  if (issue.code === 'invalid_type') {
    if (issue.received === 'undefined') return 'required field is missing';
    const scalar = issue.path.length === 1 && SCALAR_TEXT.has(String(issue.path[0]));
    return `expected ${scalar ? 'a string or a number' : issue.expected}, got ${issue.received}`;
  }
  return issue.message;
}

/** Validate and normalise one record; `fallbackDomain` applies when the record has no `domain`. */
export function checkRecord(
  value: unknown,
  fallbackDomain: Domain,
  taskset: string,
  ownColumns: ReadonlySet<string> = new Set(),
): RecordCheck {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { field: '(record)', message: `a task record must be an object, got ${describe(value)}` };
  }
  let raw = value as Record<string, unknown>;
  // The user's own columns named like a schema field: metadata under their own name.
  let own: Record<string, unknown> | undefined;
  if (ownColumns.size) {
    raw = { ...raw };
    for (const k of ownColumns) {
      if (!(k in raw)) continue;
      (own ??= {})[k] = raw[k];
      delete raw[k];
    }
  }
  const domain = raw.domain ?? fallbackDomain;
  if (typeof domain !== 'string' || !DOMAINS.includes(domain as Domain)) {
    return {
      field: 'domain',
      message: `expected one of ${DOMAINS.join(', ')}, got ${typeof domain === 'string' ? `'${domain}'` : describe(domain)}`,
    };
  }
  if (
    raw.metadata !== undefined &&
    (typeof raw.metadata !== 'object' || raw.metadata === null || Array.isArray(raw.metadata))
  ) {
    return { field: 'metadata', message: `expected an object, got ${describe(raw.metadata)}` };
  }
  const known: Record<string, unknown> = {};
  const extra: Record<string, unknown> = {};
  for (const [k0, v] of Object.entries(raw)) {
    const k = ALIASES[k0] ?? k0;
    if (k === 'domain' || k === 'metadata') continue;
    if (KNOWN.has(k)) known[k] = normalise(k, v);
    else extra[k] = v;
  }
  if (typeof known.prompt === 'string' && known.prompt === '') return { field: 'prompt', message: 'prompt is empty' };
  const meta = { ...(raw.metadata as Record<string, unknown> | undefined), ...extra, ...own };
  if (Object.keys(meta).length > 0) known.metadata = meta;
  const r = domainSchemas[domain as Domain].safeParse(known);
  if (!r.success) {
    // Every problem of the record is told (the first names the field), not "(and 1 more problem)".
    const [first, ...rest] = r.error.issues;
    const also = rest.map((i) => `'${fieldPath(i.path)}': ${issueMessage(i)}`);
    return {
      field: fieldPath(first!.path),
      message: issueMessage(first!) + (also.length ? `; also ${also.join('; ')}` : ''),
    };
  }
  const t = r.data as Omit<Task, 'taskset' | 'domain'>;
  const task: Task = { id: t.id, taskset, domain: domain as Domain };
  for (const k of [
    'prompt',
    'messages',
    'answer',
    'choices',
    'entryPoint',
    'tests',
    'image',
    'difficulty',
    'metadata',
  ] as const) {
    if (t[k] !== undefined) (task as unknown as Record<string, unknown>)[k] = t[k];
  }
  return { task };
}
