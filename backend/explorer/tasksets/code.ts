// "code": the model writes a small JavaScript function; reward = fraction of tests passed, run in
// the sandbox by code_tests. Each family is a parametrised spec with a reference implementation
// (which computes the expected values in the host) and the reference source (the expert answer).
import type { Rng } from '../../core/rng.js';
import type { CodeTestCase } from '../../core/types.js';
import type { BuiltinTaskset } from './builtin.js';
import { sampleSplit } from './sample.js';

interface Spec {
  name: string;
  describe: string;
  source: string;
  ref: (...args: never[]) => unknown;
  inputs: unknown[][];
}

const ints = (rng: Rng, n: number, lo = -9, hi = 10) => Array.from({ length: n }, () => rng.int(lo, hi));
const word = (rng: Rng) => Array.from({ length: rng.int(1, 7) }, () => 'abcxyz'[rng.int(0, 6)]).join('');

const FAMILIES: ((rng: Rng) => Spec)[] = [
  (rng) => {
    const k = rng.int(1, 100);
    return {
      name: `addK${k}`,
      describe: `returns x + ${k}`,
      source: `function addK${k}(x) { return x + ${k}; }`,
      ref: (x: number) => x + k,
      inputs: ints(rng, 4).map((x) => [x]),
    };
  },
  (rng) => {
    const k = rng.int(2, 31);
    return {
      name: `times${k}`,
      describe: `returns x * ${k}`,
      source: `function times${k}(x) { return x * ${k}; }`,
      ref: (x: number) => x * k,
      inputs: ints(rng, 4).map((x) => [x]),
    };
  },
  (rng) => {
    const k = rng.int(2, 20);
    return {
      name: `divisibleBy${k}`,
      describe: `returns true when the integer n is divisible by ${k}, else false`,
      source: `function divisibleBy${k}(n) { return n % ${k} === 0; }`,
      ref: (n: number) => n % k === 0,
      inputs: [[0], [k], [k * 3], [k + 1], ...ints(rng, 2, 1, 50).map((x) => [x])],
    };
  },
  (rng) => {
    const lo = rng.int(-20, 1);
    const hi = lo + rng.int(2, 21);
    const id = (n: number) => (n < 0 ? `m${-n}` : String(n)); // clampm3to5: [-3, 5]
    return {
      name: `clamp${id(lo)}to${id(hi)}`,
      describe: `clamps x to the range [${lo}, ${hi}]`,
      source: `function clamp${id(lo)}to${id(hi)}(x) { return Math.min(${hi}, Math.max(${lo}, x)); }`,
      ref: (x: number) => Math.min(hi, Math.max(lo, x)),
      inputs: [[lo - 3], [hi + 3], [lo], ...ints(rng, 2, lo, hi + 1).map((x) => [x])],
    };
  },
  (rng) => {
    const c = 'abcxyz'[rng.int(0, 6)]!;
    return {
      name: `count_${c}`,
      describe: `returns how many times the letter '${c}' occurs in the string s`,
      source: `function count_${c}(s) { return s.split('${c}').length - 1; }`,
      ref: (s: string) => s.split(c).length - 1,
      inputs: ['', c, `${c}${c}q${c}`, word(rng), word(rng)].map((s) => [s]),
    };
  },
  (rng) => {
    const k = rng.int(0, 5);
    return {
      name: `sumPlus${k}`,
      describe: `returns the sum of the numbers in the array xs, plus ${k}`,
      source: `function sumPlus${k}(xs) { return xs.reduce((a, b) => a + b, 0) + ${k}; }`,
      ref: (xs: number[]) => xs.reduce((a, b) => a + b, 0) + k,
      inputs: [[[]], [ints(rng, 3)], [ints(rng, 5)]],
    };
  },
  (rng) => {
    const n = rng.int(2, 5);
    return {
      name: `repeat${n}`,
      describe: `returns the string s repeated ${n} times`,
      source: `function repeat${n}(s) { return s.repeat(${n}); }`,
      ref: (s: string) => s.repeat(n),
      inputs: [[''], [word(rng)], [word(rng)]],
    };
  },
  (rng) => {
    const k = rng.int(1, 4);
    return {
      name: `maxOf${k}`,
      describe: `returns the largest number in the non-empty array xs, multiplied by ${k}`,
      source: `function maxOf${k}(xs) { return Math.max(...xs) * ${k}; }`,
      ref: (xs: number[]) => Math.max(...xs) * k,
      inputs: [[[rng.int(-9, 10)]], [ints(rng, 3)], [ints(rng, 6)]],
    };
  },
];

export const codeTaskset: BuiltinTaskset = {
  name: 'code',
  reward: 'code_tests',
  generate(size, seed, split) {
    return sampleSplit('code', size, seed, split, (rng) => {
      const spec = FAMILIES[rng.int(0, FAMILIES.length)]!(rng);
      const tests: CodeTestCase[] = spec.inputs.map((args) => ({
        args,
        expected: (spec.ref as (...a: unknown[]) => unknown)(...args),
      }));
      return {
        key: spec.name,
        task: {
          taskset: 'builtin:code',
          domain: 'code',
          prompt: `Write a JavaScript function \`${spec.name}\` that ${spec.describe}. Answer with the function in a \`\`\`js block.`,
          entryPoint: spec.name,
          tests,
          difficulty: 0.5,
          metadata: { solution: spec.source },
        },
      };
    });
  },
  solve: (t) => '```js\n' + String(t.metadata?.solution ?? '') + '\n```',
};
