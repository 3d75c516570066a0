// math_answer: arithmetic answers checked by exact numeric equivalence (1/2 == 0.5 == \frac{1}{2},
// 1,000 == 1000; see numbers.ts), falling back to a normalised text comparison for non-numbers.
// Format: the answer goes in `<answer>...</answer>` (exactly one block). `\boxed{}` or a final
// `Answer: ...` line still count for correctness but earn no format credit.
// reward = ACCURACY_WEIGHT * correct + FORMAT_WEIGHT * format  (1.0 for a right answer in the tag).
import type { Task } from '../../core/types.js';
import type { RewardResult } from '../workflow.js';
import { extractAnswer, finalHashes } from './extract.js';
import { numbersMatch, parseNumber } from './numbers.js';
import { badTask } from './bad-task.js';

export const ACCURACY_WEIGHT = 0.9;
export const FORMAT_WEIGHT = 0.1;

/** Text comparison for answers that are not numbers: case, spaces, `$`, braces and a final period ignored. */
export function normaliseMathText(s: string): string {
  return s
    .toLowerCase()
    .replace(/\\(?:left|right|displaystyle|text|mathrm)\b/g, '')
    .replace(/[\s${}]/g, '')
    .replace(/\.$/, '');
}

export function mathAnswersEqual(reference: string, answer: string): boolean {
  const ref = parseNumber(reference);
  if (ref) {
    const got = parseNumber(answer);
    return got !== null && numbersMatch(ref, got, answer);
  }
  const a = normaliseMathText(answer);
  return a !== '' && a === normaliseMathText(reference);
}

export async function mathAnswer(task: Task, response: string): Promise<RewardResult> {
  if (typeof task.answer !== 'string' || task.answer.trim() === '') return badTask('math_answer needs task.answer');
  const ex = extractAnswer(response);
  const format = ex.source === 'tag' && ex.tagCount === 1 && ex.text !== '' ? 1 : 0;
  // A GSM8K reference (`steps ... #### 42`) is compared by its final answer.
  const reference = finalHashes(task.answer) ?? task.answer;
  const correct = ex.text !== null && mathAnswersEqual(reference, ex.text) ? 1 : 0;
  return {
    reward: ACCURACY_WEIGHT * correct + FORMAT_WEIGHT * format,
    status: 'ok',
    details: { correct, format, source: ex.source, extracted: (ex.text ?? '').slice(0, 200) },
  };
}
