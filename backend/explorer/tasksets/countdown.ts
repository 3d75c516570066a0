// "countdown": reach a target from 3 or 4 given numbers with + - * / (each at most once). Targets
// are built from a random expression over the numbers, so every task has a known solution.
import type { Rng } from '../../core/rng.js';
import type { BuiltinTaskset } from './builtin.js';
import { answerTag, sampleSplit } from './sample.js';

/** Combine the numbers left to right with random operators; keeps integer, non-negative values. */
function build(rng: Rng, nums: number[]): { expr: string; value: number } {
  let expr = String(nums[0]);
  let value = nums[0]!;
  for (const n of nums.slice(1)) {
    const ops = ['+', '*', ...(value - n >= 0 ? ['-'] : []), ...(n !== 0 && value % n === 0 ? ['/'] : [])];
    const op = rng.pick(ops);
    expr = `(${expr} ${op} ${n})`;
    value = op === '+' ? value + n : op === '-' ? value - n : op === '*' ? value * n : value / n;
  }
  return { expr: expr.replace(/^\((.*)\)$/, '$1'), value };
}

export const countdownTaskset: BuiltinTaskset = {
  name: 'countdown',
  reward: 'countdown',
  generate(size, seed, split) {
    return sampleSplit('countdown', size, seed, split, (rng) => {
      const k = rng.int(3, 5);
      const nums = Array.from({ length: k }, () => rng.int(1, 13));
      const { expr, value } = build(rng, nums);
      const shown = rng.shuffle([...nums]);
      return {
        key: `${shown.join(',')}=${value}`,
        task: {
          taskset: 'builtin:countdown',
          domain: 'math',
          prompt: `Using the numbers ${shown.join(', ')} (each at most once) and + - * / ( ), make ${value}. Write the expression in <answer></answer>.`,
          answer: String(value),
          difficulty: (k - 3) / 1,
          metadata: { numbers: shown, target: value, solution: expr },
        },
      };
    });
  },
  solve: (t) => answerTag(String(t.metadata?.solution ?? '')),
};
