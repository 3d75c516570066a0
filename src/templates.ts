// Starting files the commands write: a taskset per domain (JSONL, one task per line, fields as in
// backend/core/types.ts Task) and a training config.
import type { Domain } from '../backend/core/types.js';
import { proposeMapping, type FileFormat } from './field-mapping.js';

export const DOMAINS: { domain: Domain; label: string; detail: string }[] = [
  { domain: 'math', label: 'Math', detail: 'arithmetic / countdown, exact answer check' },
  { domain: 'code', label: 'Code', detail: 'write a JavaScript function, scored by tests in a sandbox' },
  { domain: 'k12', label: 'K-12', detail: 'word problems and multiple choice' },
  { domain: 'vision', label: 'Vision', detail: 'questions about small images' },
  { domain: 'multiturn', label: 'Multi-turn', detail: 'an environment answers each turn' },
  { domain: 'text', label: 'Text', detail: 'free text with a reference answer' },
];

const RECORDS: Record<Domain, object[]> = {
  math: [
    { id: 'math-1', prompt: 'What is 17 + 25?', answer: '42' },
    { id: 'math-2', prompt: 'What is 9 * 8?', answer: '72' },
  ],
  code: [
    {
      id: 'code-1',
      prompt: 'Write a function add(a, b) that returns a + b.',
      entryPoint: 'add',
      tests: [
        { args: [1, 2], expected: 3 },
        { args: [-1, 1], expected: 0 },
      ],
    },
  ],
  k12: [
    { id: 'k12-1', prompt: 'Which is a mammal?', choices: ['shark', 'whale', 'trout', 'eel'], answer: 'B' },
    { id: 'k12-2', prompt: 'Tom has 3 apples and buys 4 more. How many apples does he have?', answer: '7' },
  ],
  vision: [
    {
      id: 'vision-1',
      prompt: 'What colour is the square?',
      answer: 'red',
      image: { width: 2, height: 1, rgb: [255, 0, 0, 255, 0, 0] },
    },
  ],
  multiturn: [
    { id: 'guess-1', messages: [{ role: 'system', content: 'Guess the number between 1 and 10.' }], answer: '7' },
  ],
  text: [{ id: 'text-1', prompt: 'Reverse the word: studio', answer: 'oiduts' }],
};

export function tasksetTemplate(domain: Domain): string {
  return RECORDS[domain].map((r) => JSON.stringify({ ...r, domain })).join('\n') + '\n';
}

/** Workflow and reward that score each domain's template tasks (as in configs/examples). */
const SCORING: Record<Domain, { workflow: string; reward: string; maxNewTokens: number }> = {
  math: { workflow: 'single_turn', reward: 'math_answer', maxNewTokens: 24 },
  code: { workflow: 'single_turn', reward: 'code_tests', maxNewTokens: 64 },
  k12: { workflow: 'single_turn', reward: 'k12', maxNewTokens: 24 },
  vision: { workflow: 'vision', reward: 'k12', maxNewTokens: 8 },
  multiturn: { workflow: 'multi_turn', reward: 'environment', maxNewTokens: 16 },
  text: { workflow: 'single_turn', reward: 'exact_match', maxNewTokens: 24 },
};

/** The domain a taskset file is for, guessed from its name (`tasksets/code.jsonl` -> code); default math. */
export function domainOf(tasksetPath: string): Domain {
  const base = tasksetPath.split(/[\\/]/).pop()!.toLowerCase();
  return DOMAINS.find((d) => base.startsWith(d.domain))?.domain ?? 'math';
}

/** The default `model:` / `tokenizer:` lines; src/models/model-card.ts modelLines() gives them for another preset or an imported model. */
const PRESET_MODEL = ['model:', '  size: tiny-0.4m', '  max_seq_len: 256', 'tokenizer:', '  kind: char'];

export type { FileFormat };

/**
 * The `format` mapping a record with foreign field names needs (`question` -> prompt_key), from
 * the names other datasets use and the values (src/field-mapping.ts); undefined when the record
 * already has the schema's names. `response_key` is the reference answer of a task and the
 * demonstration of an expert record.
 */
export function inferFormat(
  record: Record<string, unknown> | Record<string, unknown>[],
  role: 'task' | 'expert' = 'task',
): FileFormat | undefined {
  return proposeMapping(Array.isArray(record) ? record : [record], role).format;
}

/** Files of the workspace the template points the config at, besides the taskset. */
export interface TemplateFiles {
  /** The taskset's own field names. */
  format?: FileFormat;
  /** The taskset is a dataset folder: its split (Open Dataset…). */
  split?: string;
  /** A held-out file of the user's, or a dataset's held-out split (else no eval: see configTemplate). */
  eval?: { path: string; format?: FileFormat; split?: string };
  /** Demonstrations ({prompt, response} per line): the run then trains with MIX (RL + SFT on experts). */
  experts?: { path: string; format?: FileFormat; split?: string };
}

const flow = (f: FileFormat) =>
  `{ ${Object.entries(f)
    .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
    .join(', ')} }`;

/**
 * The `name:` of a generated config: the taskset and the model (`math-words-qwen2-0.5b`), with `-2`,
 * `-3`... after a name a run or another config already has, so runs are told apart by name.
 */
export function templateRunName(tasksetPath: string, model: string | undefined, taken: Iterable<string>): string {
  const slug = (x: string) =>
    x
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^[-.]+|[-.]+$/g, '');
  const file = tasksetPath.split(/[\\/]/).pop() ?? '';
  const base = [slug(file.replace(/\.[^.]*$/, '')), model ? slug(model) : ''].filter(Boolean).join('-') || 'run';
  const used = new Set(taken);
  let name = base;
  for (let k = 2; used.has(name); k++) name = `${base}-${k}`;
  return name;
}

/**
 * The config "Start Training" writes next to the workspace root: it validates as written and runs
 * on the user's taskset (paths are relative to the config file), with the `format` mapping its
 * files need, the user's eval file when there is one (else no `eval`: the run holds 10% of a taskset
 * of 20+ tasks out, or runs without held-out accuracy, and the comment says so),
 * and MIX over the user's expert file when there is one (so promoted and added experts are
 * trained on; GRPO without). `trainer`: extra `trainer:` lines (a pretrained model's lr).
 */
export function configTemplate(
  tasksetPath: string,
  domain: Domain = domainOf(tasksetPath),
  model: string[] = PRESET_MODEL,
  files: TemplateFiles = {},
  trainer: string[] = [],
  runName = 'my-run',
): string {
  const s = SCORING[domain];
  const path = JSON.stringify(tasksetPath);
  const format = (f: FileFormat | undefined, comment: boolean) =>
    f
      ? [`  format: ${flow(f)}`]
      : comment
        ? [
            '  # Data from elsewhere: map its own field names, e.g.',
            '  # format: { prompt_key: question, response_key: answer, id_key: qid }',
          ]
        : [];
  return [
    '# RFT Studio training config. Start it with "RFT Studio: Start Training".',
    '# Paths are relative to this file.',
    `name: ${runName}`,
    'mode: both',
    'seed: 42',
    ...model,
    'taskset:',
    `  path: ${path}`,
    ...(files.split ? [`  split: ${JSON.stringify(files.split)}`] : []),
    `  domain: ${domain}`,
    '  selector: shuffle',
    ...format(files.format, true),
    ...(files.eval
      ? [
          'eval:',
          `  path: ${JSON.stringify(files.eval.path)}`,
          ...(files.eval.split ? [`  split: ${JSON.stringify(files.eval.split)}`] : []),
          `  domain: ${domain}`,
          ...format(files.eval.format, false),
        ]
      : [
          '# No eval set given: a taskset of 20 tasks or more holds out 10% of them (never trained on);',
          '# a smaller one trains on all and reports no held-out accuracy. To choose:',
          '# eval:',
          '#   path: eval.jsonl   # a held-out file of your own, or',
          '#   holdout: 0.1       # this share of the taskset',
        ]),
    ...(files.experts
      ? [
          'experts:',
          `  path: ${JSON.stringify(files.experts.path)}`,
          ...(files.experts.split ? [`  split: ${JSON.stringify(files.experts.split)}`] : []),
          ...format(files.experts.format, false),
        ]
      : ['# experts:', '#   path: experts.jsonl  # demonstrations: {prompt, response} per line (MIX / SFT use them)']),
    'workflow:',
    `  name: ${s.workflow}`,
    `  reward: ${s.reward}  # a task's own "reward" field wins`,
    'algorithm:',
    ...(files.experts
      ? ['  name: mix  # GRPO on the explored rollouts + SFT on the expert ones (promoted ones too)']
      : ['  name: grpo']),
    'explorer:',
    '  tasks_per_step: 4',
    '  repeat_times: 4',
    '  sampling:',
    `    max_new_tokens: ${s.maxNewTokens}`,
    '  eval_sampling:',
    `    max_new_tokens: ${s.maxNewTokens}`,
    'trainer:',
    // The trainer's whole batch. With experts (MIX) it is left unset: one explore step's rollouts plus
    // the expert share beside them, which cycles through however few demonstrations the user has
    // (coordinator/stage-batch.ts); nothing to recompute when tasks_per_step or repeat_times change.
    files.experts
      ? "  # batch_size: unset: the 16 rollouts of a step (4 tasks x 4 samples) + 16 expert rows (MIX's share, cycling through your demonstrations)"
      : '  batch_size: 16  # 4 tasks x 4 samples a step',
    '  steps: 50',
    // A pretrained model's lr, warm-up and clip (src/models/model-card.ts trainerLines).
    ...trainer,
    'monitor:',
    '  eval_every: 10  # held-out accuracy every 10 steps (the dashboard charts it)',
    '',
  ].join('\n');
}
