// "arith": integer arithmetic (+, -, *, and exact division) with one or two operators, scored by
// math_answer (exact numeric equivalence + format reward for the <answer> tag).
import type { Rng } from '../../core/rng.js';
import type { BuiltinTaskset } from './builtin.js';
import { answerTag, sampleSplit } from './sample.js';

const OPS = ['+', '-', '*', '/'] as const;

function term(rng: Rng): { text: string; value: number } {
  const op = rng.pick(OPS);
  let a = rng.int(1, 20);
  const b = rng.int(1, 12);
  if (op === '/') a = b * rng.int(1, 10); // exact division only
  const value = op === '+' ? a + b : op === '-' ? a - b : op === '*' ? a * b : a / b;
  return { text: `${a} ${op} ${b}`, value };
}

export const arithTaskset: BuiltinTaskset = {
  name: 'arith',
  reward: 'math_answer',
  generate(size, seed, split) {
    return sampleSplit('arith', size, seed, split, (rng) => {
      const t = term(rng);
      let text = t.text;
      let value = t.value;
      const two = rng.next() < 0.5;
      if (two) {
        const c = rng.int(1, 10);
        const add = rng.next() < 0.5;
        text = `(${t.text}) ${add ? '+' : '-'} ${c}`;
        value = add ? value + c : value - c;
      }
      return {
        key: text,
        task: {
          taskset: 'builtin:arith',
          domain: 'math',
          prompt: `Compute ${text}. Put the result in <answer></answer>.`,
          answer: String(value),
          difficulty: two ? 1 : 0,
        },
      };
    });
  },
  solve: (t) => answerTag(t.answer ?? ''),
};
