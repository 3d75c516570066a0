// math_answer and countdown: right, wrong, malformed and hostile responses.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Task } from '../../backend/core/types.js';
import { evaluateExpression, ExpressionError } from '../../backend/explorer/rewards/arith-parser.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import { parseNumber } from '../../backend/explorer/rewards/numbers.js';
import { Rational } from '../../backend/explorer/rewards/rational.js';

const math = rewardFns.get('math_answer');
const countdown = rewardFns.get('countdown');
const mt = (answer: string): Task => ({ id: 'm', taskset: 't', domain: 'math', prompt: 'q', answer });
const ct = (numbers: number[], target: number, extra: Record<string, unknown> = {}): Task => ({
  id: 'c',
  taskset: 't',
  domain: 'math',
  prompt: 'q',
  metadata: { numbers, target, ...extra },
});
const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} != ${b}`);

test('rational arithmetic is exact', () => {
  const r = (n: bigint, d = 1n) => new Rational(n, d);
  assert.ok(r(7n, 2n).mul(r(2n)).equals(r(7n)));
  assert.ok(parseNumber('0.1')!.add(parseNumber('0.2')!).equals(r(3n, 10n)));
  assert.ok(parseNumber('1/2')!.equals(parseNumber('0.5')!));
  assert.ok(parseNumber('\\frac{3}{4}')!.equals(parseNumber('0.75')!));
  assert.ok(parseNumber('1 1/2')!.equals(r(3n, 2n)));
  assert.ok(parseNumber('-1 1/2')!.equals(r(-3n, 2n)));
  assert.ok(parseNumber('1,234,567.5')!.equals(r(2469135n, 2n)));
  assert.ok(parseNumber('$12')!.equals(r(12n)));
  assert.ok(parseNumber('1.5e3')!.equals(r(1500n)));
  assert.equal(parseNumber('1,2'), null, 'a comma is a thousands separator only in groups of three');
  assert.equal(parseNumber('1e999999999'), null, 'huge exponents are refused, not computed');
  assert.equal(parseNumber('9'.repeat(5000)), null);
  assert.equal(parseNumber('3/0'), null);
  assert.throws(() => r(1n).div(r(0n)), RangeError);
});

test('math_answer: right answers in the primary format get 1, in fallbacks 0.9 (no format credit)', async () => {
  for (const [answer, response] of [
    ['7', 'We add 3 and 4. <answer>7</answer>'],
    ['0.5', '<answer>1/2</answer>'],
    ['1/2', '<answer> 0.50 </answer>'],
    ['3/4', '<answer>\\frac{3}{4}</answer>'],
    ['1000', '<answer>1,000</answer>'],
    ['-2', '<answer>−2</answer>'],
    ['1/3', '<answer>0.333</answer>'],
    ['12', '<answer>$12$</answer>'],
  ] as const) {
    const r = await math(mt(answer), response);
    assert.equal(r.status, 'ok');
    close(r.reward, 1);
    assert.equal(r.details?.format, 1, response);
  }
  for (const response of ['so \\boxed{42}', 'Reasoning...\nAnswer: 42', '**Final answer:** 42']) {
    const r = await math(mt('42'), response);
    close(r.reward, 0.9);
    assert.equal(r.details?.format, 0);
  }
});

test('math_answer: wrong answers get at most the format credit', async () => {
  for (const [answer, response, expected] of [
    ['7', '<answer>8</answer>', 0.1],
    ['1/3', '<answer>0.33</answer>', 0.1], // too few places for a non-terminating value
    ['1/8', '<answer>0.13</answer>', 0.1], // 1/8 terminates: must be exact
    ['7', 'the answer is 7', 0], // no recognised format at all
    ['7', '<answer>7</answer><answer>7</answer>', 0.9], // right, but two blocks: no format credit
    ['7', '<answer>8</answer> ... <answer>7</answer>', 0.9],
  ] as const) {
    close((await math(mt(answer), response)).reward, expected);
  }
});

test('math_answer: malformed and hostile responses score 0 and never throw', async () => {
  const hostile = [
    '',
    '<answer></answer>',
    '<answer>seven-ish</answer>',
    '<answer>',
    '</answer><answer',
    '\\boxed{',
    '<answer>'.repeat(50_000),
    '9'.repeat(100_000),
    `<answer>${'9'.repeat(100_000)}</answer>`,
    '<answer>1e999999999</answer>',
    '<answer>__proto__</answer>',
    '\u0000\uFFFF\uD800',
  ];
  for (const h of hostile) {
    const r = await math(mt('7'), h);
    assert.equal(r.status, 'ok');
    assert.ok(r.reward <= 0.1, `${h.slice(0, 30)}: ${r.reward}`);
    assert.equal(r.details?.correct, 0);
  }
  assert.equal(
    (await math({ ...mt('7'), answer: undefined }, '<answer>7</answer>')).status,
    'infra_failure',
    'a task without an answer cannot be scored',
  );
});

test('countdown: exact parser and evaluator', () => {
  assert.ok(evaluateExpression('7/2*2').value.equals(new Rational(7n)), '7/2*2 is exactly 7');
  assert.ok(evaluateExpression('(1 + 2) * 3 - 4 / 8').value.equals(new Rational(17n, 2n)));
  assert.ok(evaluateExpression('10 - 2 - 3').value.equals(new Rational(5n)), 'left associative');
  assert.ok(evaluateExpression('8 / 4 / 2').value.equals(new Rational(1n)));
  assert.ok(evaluateExpression('2 × 3 ÷ 6').value.equals(new Rational(1n)));
  assert.deepEqual(evaluateExpression('(25-5)*(3+1)').numbers.map(String), ['25', '5', '3', '1']);
  for (const bad of [
    '',
    '1 +',
    '(1',
    '1)',
    '-3+4',
    '2**3',
    '2^3',
    'Math.max(1,2)',
    'process.exit()',
    '1e3',
    '1..2',
    '(((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))',
    '1+'.repeat(300) + '1',
  ]) {
    assert.throws(() => evaluateExpression(bad), ExpressionError, bad.slice(0, 30));
  }
  assert.throws(() => evaluateExpression('1/(2-2)'), RangeError);
});

test('countdown: right answers get 1', async () => {
  for (const [nums, target, response] of [
    [[1, 2, 3, 4], 24, '<answer>1*2*3*4</answer>'],
    [[25, 5, 3, 1], 80, 'think... <answer>(25-5)*(3+1) = 80</answer>'],
    [[7, 2, 2], 7, '<answer>7/2*2</answer>'],
    [[6, 6, 2], 24, '<answer>(6 + 6) × 2</answer>'],
    [[3, 3, 8, 8], 24, '<answer>8/(3-8/3)</answer>'],
    [[10, 3], 7, '<answer>10 - 3</answer>'],
  ] as const) {
    const r = await countdown(ct([...nums], target), response);
    assert.equal(r.status, 'ok');
    assert.equal(r.reward, 1, response);
  }
});

test('countdown: wrong answers get the format credit or nothing', async () => {
  const t = ct([2, 3, 4], 14);
  for (const [response, expected] of [
    ['<answer>2*3+4</answer>', 0.1], // 10
    ['<answer>3*4+2*1</answer>', 0.1], // 1 not given
    ['<answer>4*4-2</answer>', 0.1], // 4 twice
    ['<answer>2+3+4 = 14</answer>', 0.1], // a false claim
    ['<answer>4/(3-3)</answer>', 0.1], // division by zero (and 3 twice)
    ['<answer>14</answer>', 0.1], // 14 is not a given number
    ['2*(3+4)', 0], // right, but no answer block
    ['<answer>2*(3+4)+0*0</answer>', 0.1],
  ] as const) {
    assert.equal((await countdown(t, response)).reward, expected, response);
  }
  assert.equal((await countdown(t, '<answer>2*(3+4)</answer>')).reward, 1);
  assert.equal(
    (await countdown(ct([2, 3, 4, 5], 14, { useAll: true }), '<answer>2*(3+4)</answer>')).reward,
    0.1,
    'useAll needs every number',
  );
});

test('countdown: malformed and hostile answers are never evaluated as code', async () => {
  const t = ct([1, 2, 3], 6);
  let touched = false;
  (globalThis as Record<string, unknown>).__countdownProbe = () => (touched = true);
  for (const response of [
    '<answer>__countdownProbe()</answer>',
    '<answer>1+2+3; __countdownProbe()</answer>',
    '<answer>constructor.constructor("return process")()</answer>',
    '<answer>(1+2+3)*'.repeat(10_000) + '</answer>',
    '(1+2+3)*'.repeat(10_000),
    `<answer>${'('.repeat(5000)}1${')'.repeat(5000)}</answer>`,
    '<answer>9999999999999999999999999999999999999999 * 9999999999999999999999999</answer>',
    '<answer></answer>',
    '',
  ]) {
    const r = await countdown(t, response);
    assert.equal(r.status, 'ok');
    assert.ok(r.reward <= 0.1, response.slice(0, 40));
  }
  assert.equal(touched, false);
  delete (globalThis as Record<string, unknown>).__countdownProbe;
  assert.equal(
    (await countdown({ id: 'x', taskset: 't', domain: 'math', prompt: 'q' }, '<answer>1</answer>')).status,
    'infra_failure',
  );
});
