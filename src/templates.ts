// Starting files the commands write: a taskset per domain (JSONL, one task per line, fields as in
// backend/core/types.ts Task) and a training config.
import type { Domain } from '../backend/core/types.js';

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
    { id: 'code-1', prompt: 'Write a function add(a, b) that returns a + b.', entryPoint: 'add', tests: [{ args: [1, 2], expected: 3 }, { args: [-1, 1], expected: 0 }] },
  ],
  k12: [
    { id: 'k12-1', prompt: 'Which is a mammal?', choices: ['shark', 'whale', 'trout', 'eel'], answer: 'B' },
    { id: 'k12-2', prompt: 'Tom has 3 apples and buys 4 more. How many apples does he have?', answer: '7' },
  ],
  vision: [{ id: 'vision-1', prompt: 'What colour is the square?', answer: 'red', image: { width: 2, height: 1, rgb: [255, 0, 0, 255, 0, 0] } }],
  multiturn: [{ id: 'guess-1', messages: [{ role: 'system', content: 'Guess the number between 1 and 10.' }], answer: '7' }],
  text: [{ id: 'text-1', prompt: 'Reverse the word: studio', answer: 'oiduts' }],
};

export function tasksetTemplate(domain: Domain): string {
  return RECORDS[domain].map((r) => JSON.stringify({ ...r, domain })).join('\n') + '\n';
}

export function configTemplate(tasksetPath: string): string {
  return [
    '# RFT Studio training config (see docs). Start with "RFT Studio: Start Training".',
    'mode: both',
    'model:',
    '  size: tiny',
    'taskset:',
    `  path: ${tasksetPath}`,
    'algorithm:',
    '  name: mix',
    'explorer:',
    '  repeat_times: 4',
    'trainer:',
    '  steps: 100',
    'seed: 42',
    '',
  ].join('\n');
}
