// k12 (word problems, multiple choice) and exact_match: right, wrong, malformed and hostile responses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Task } from '../../backend/core/types.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';

const k12 = rewardFns.get('k12');
const exact = rewardFns.get('exact_match');
const free = (answer: string): Task => ({ id: 'k', taskset: 't', domain: 'k12', prompt: 'q', answer });
const mc = (answer: string, choices = ['shark', 'whale', 'trout', 'eel']): Task => ({
  id: 'k',
  taskset: 't',
  domain: 'k12',
  prompt: 'Which is a mammal?',
  choices,
  answer,
});
const score = async (t: Task, r: string) => {
  const res = await k12(t, r);
  assert.equal(res.status, 'ok');
  return res.reward;
};

test('k12 free answers: numbers, commas, fractions, percentages and units match when equal', async () => {
  for (const [answer, response] of [
    ['7', 'Tom has 3 + 4 = 7 apples. <answer>7</answer>'],
    ['7', 'He ends with 7 apples.'], // last number fallback
    ['1000', '<answer>1,000</answer>'],
    ['1,000', '<answer>1000</answer>'],
    ['0.5', '<answer>1/2</answer>'],
    ['1/2', 'Answer: 0.5'],
    ['1 1/2', '<answer>1.5</answer>'],
    ['5 cm', '<answer>5cm</answer>'],
    ['5 cm', '<answer>5 centimeters</answer>'],
    ['5 cm', '<answer>50 mm</answer>'],
    ['5 cm', '<answer>0.05 m</answer>'],
    ['5 cm', '<answer>5</answer>'], // a bare number in the expected unit
    ['2 hours', 'The answer is 120 minutes.'],
    ['3 kg', '<answer>3000 grams</answer>'],
    ['$12', '<answer>12 dollars</answer>'],
    ['12 dollars', '<answer>$12.00</answer>'],
    ['50%', '<answer>50 percent</answer>'],
    ['50%', '<answer>50</answer>'],
    ['50%', '<answer>0.5</answer>'],
    ['0.25', '<answer>25%</answer>'],
    ['x = 4', '<answer>4</answer>'],
    ['Paris', '<answer>paris.</answer>'],
    ['the Pacific Ocean', 'Answer: Pacific ocean'],
  ] as const) {
    assert.equal(await score(free(answer), response), 1, `${answer} vs ${response}`);
  }
});

test('k12 free answers: wrong values, wrong units and ambiguous spans get 0', async () => {
  for (const [answer, response] of [
    ['7', '<answer>8</answer>'],
    ['5 cm', '<answer>5 kg</answer>'], // another dimension
    ['5 cm', '<answer>5 m</answer>'],
    ['1000', '<answer>1,0000</answer>'], // not a thousands grouping
    ['0.5', '<answer>0.6</answer>'],
    ['50%', '<answer>0.05</answer>'],
    ['7', '<answer>7 or 8</answer>'],
    ['7', '<answer>5 apples and 2 pears</answer>'],
    ['Paris', '<answer>Rome</answer>'],
    ['Paris', '<answer></answer>'],
  ] as const) {
    assert.equal(await score(free(answer), response), 0, `${answer} vs ${response}`);
  }
});

test('k12 multiple choice: the letter in its usual spellings, or the choice text', async () => {
  for (const response of [
    'B',
    '(B)',
    'B)',
    'b.',
    '**B**',
    '<answer>B</answer>',
    '<answer>(B) whale</answer>',
    'The answer is B.',
    'Answer: option B',
    'I think it is\nB) whale',
    'whale',
    '<answer>Whale</answer>',
    'The answer is whale',
  ]) {
    assert.equal(await score(mc('B'), response), 1, response);
  }
  assert.equal(await score(mc('whale'), 'B'), 1, 'task answer given as the choice text');
  assert.equal(await score(mc('b'), '<answer>B</answer>'), 1);
});

test('k12 multiple choice: wrong, several and contradictory choices get 0', async () => {
  for (const response of [
    'A',
    '<answer>C</answer>',
    'A B C D',
    '<answer>A, B, C, D</answer>',
    'ABCD',
    '<answer>B) shark</answer>',
    'shark or whale',
    '<answer>E</answer>',
    '<answer>Z</answer>',
    '',
  ]) {
    assert.equal(await score(mc('B'), response), 0, response);
  }
});

test('k12: hostile and oversized responses score 0 quickly; a broken task is not the model’s fault', async () => {
  const hostile = [
    '1'.repeat(200_000),
    '<answer>'.repeat(40_000),
    '(B'.repeat(50_000),
    '1,'.repeat(100_000),
    `<answer>${'9'.repeat(100_000)} cm</answer>`,
    '\uD800\u0000<answer>__proto__</answer>',
    'a '.repeat(100_000),
  ];
  for (const h of hostile) {
    assert.equal(await score(free('7'), h), 0, h.slice(0, 20));
    assert.equal(await score(mc('B'), h), 0, h.slice(0, 20));
  }
  assert.equal((await k12(mc('F'), 'B')).status, 'infra_failure', 'answer F with four choices');
  assert.equal((await k12({ ...free('7'), answer: ' ' }, '7')).status, 'infra_failure');
});

test('exact_match: exact, and positional partial credit where the task asks for it', async () => {
  const t: Task = { id: 'r', taskset: 't', domain: 'text', prompt: 'rev abc', answer: 'cba' };
  assert.equal((await exact(t, ' cba\n')).reward, 1);
  assert.equal((await exact(t, 'cab')).reward, 0);
  const p = { ...t, metadata: { partial_credit: true } };
  assert.equal((await exact(p, 'cba')).reward, 1);
  assert.equal((await exact(p, 'cbx')).reward, 0.5 * (2 / 3));
  assert.equal((await exact(p, 'cbaaaa')).reward, 0.5 * (3 / 6), 'extra characters dilute the credit');
  assert.equal((await exact(p, '')).reward, 0);
  // malformed / hostile: a flood of text, control characters, lone surrogates
  assert.ok((await exact(p, 'c'.repeat(1_000_000))).reward < 0.001);
  assert.equal((await exact(t, '\u0000cba\uD800')).reward, 0);
  assert.equal((await exact({ ...t, answer: undefined }, 'x')).status, 'infra_failure');
});

test('registry: every built-in reward is registered by name', () => {
  for (const name of ['exact_match', 'math_answer', 'countdown', 'k12', 'code_tests'])
    assert.ok(rewardFns.has(name), name);
  assert.throws(() => rewardFns.get('nope'), /unknown reward function 'nope'/);
});
