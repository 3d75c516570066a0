// countdown: reach the target from the given numbers with + - * / and parentheses, each number
// used at most as often as it is given (all of them when `metadata.useAll`). The expression in
// `<answer>...</answer>` (a trailing `= 24` is allowed) is parsed by our own parser, never eval,
// and evaluated in exact rational arithmetic, so 7/2*2 is exactly 7.
// Task: metadata.numbers (number[]), metadata.target (number; else task.answer).
// reward: 1 when correct; FORMAT_REWARD when the tag holds a well-formed expression that is not a
// solution (wrong value, numbers not allowed, division by zero); 0 otherwise.
import type { Task } from '../../core/types.js';
import type { RewardResult } from '../workflow.js';
import { evaluateExpression, ExpressionError, overusedNumbers } from './arith-parser.js';
import { extractAnswer } from './extract.js';
import { parseNumber } from './numbers.js';
import { Rational } from './rational.js';
import { badTask } from './bad-task.js';

export const FORMAT_REWARD = 0.1;

interface CountdownSpec {
  numbers: Rational[];
  target: Rational;
  useAll: boolean;
}

function spec(task: Task): CountdownSpec | string {
  const nums = task.metadata?.numbers;
  if (
    !Array.isArray(nums) ||
    nums.length === 0 ||
    !nums.every((n) => typeof n === 'number' && Number.isFinite(n) && n >= 0)
  ) {
    return 'countdown needs metadata.numbers: a list of non-negative numbers';
  }
  const t = task.metadata?.target ?? task.answer;
  const target =
    typeof t === 'number' && Number.isFinite(t) ? Rational.of(t) : typeof t === 'string' ? parseNumber(t) : null;
  if (!target) return 'countdown needs metadata.target (or task.answer) as a number';
  return { numbers: nums.map((n) => Rational.of(n as number)), target, useAll: task.metadata?.useAll === true };
}

/** The expression part of an answer: drops `= result` on either side; LaTeX operators to ASCII. */
export function expressionOf(answer: string): string {
  const parts = answer
    .split('=')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const withOps = parts.filter((p) => parseNumber(p) === null);
  return (withOps[0] ?? parts[0] ?? '')
    .replace(/\\times/g, '*')
    .replace(/\\div/g, '/')
    .replace(/\\cdot/g, '*');
}

export async function countdown(task: Task, response: string): Promise<RewardResult> {
  const s = spec(task);
  if (typeof s === 'string') return badTask(s);
  const ex = extractAnswer(response);
  if (ex.source !== 'tag' || ex.text === null)
    return { reward: 0, status: 'ok', details: { correct: 0, format: 0, why: 'no <answer> block' } };
  const expression = expressionOf(ex.text);
  const fail = (why: string, format: number): RewardResult => ({
    reward: format ? FORMAT_REWARD : 0,
    status: 'ok',
    details: { correct: 0, format, why, expression: expression.slice(0, 200) },
  });
  let ev;
  try {
    ev = evaluateExpression(expression);
  } catch (e) {
    if (e instanceof ExpressionError) return fail(`not an expression: ${e.message}`, 0);
    if (e instanceof RangeError) return fail('division by zero', 1);
    throw e;
  }
  const over = overusedNumbers(ev.numbers, s.numbers);
  if (over.length > 0) return fail(`uses numbers not given (or too often): ${over.join(', ')}`, 1);
  if (s.useAll && ev.numbers.length !== s.numbers.length) return fail('must use every number', 1);
  if (!ev.value.equals(s.target)) return fail(`evaluates to ${ev.value}, not ${s.target}`, 1);
  return { reward: 1, status: 'ok', details: { correct: 1, format: 1, expression: expression.slice(0, 200) } };
}
