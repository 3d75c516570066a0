// "k12": grade-school word problems (counts, units, fractions) and multiple-choice questions,
// scored by k12 (normalised answer matching: numbers, units, fractions, letters).
import type { Rng } from '../../core/rng.js';
import type { BuiltinTaskset } from './builtin.js';
import { answerTag, sampleSplit, type Candidate } from './sample.js';

const NAMES = ['Ana', 'Ben', 'Chen', 'Dara', 'Eli', 'Fay', 'Gus', 'Hana'];
const THINGS = ['apples', 'pencils', 'stickers', 'marbles', 'books', 'shells'];
const LETTERS = 'ABCD';

function word(rng: Rng): Candidate {
  const who = rng.pick(NAMES);
  const what = rng.pick(THINGS);
  const kind = rng.int(0, 4);
  let prompt: string;
  let answer: string;
  if (kind === 0) {
    const bags = rng.int(2, 10);
    const each = rng.int(2, 12);
    prompt = `${who} has ${bags} boxes with ${each} ${what} in each box. How many ${what} does ${who} have?`;
    answer = String(bags * each);
  } else if (kind === 1) {
    const have = rng.int(10, 60);
    const give = rng.int(1, have);
    prompt = `${who} had ${have} ${what} and gave away ${give}. How many ${what} are left?`;
    answer = String(have - give);
  } else if (kind === 2) {
    const m = rng.int(1, 10);
    const cm = rng.int(1, 99);
    prompt = `A ribbon is ${m} m and ${cm} cm long. How long is it in centimeters?`;
    answer = `${m * 100 + cm} cm`;
  } else {
    const den = rng.pick([2, 3, 4, 5]);
    const num = rng.int(1, den);
    const total = den * rng.int(2, 9);
    prompt = `${who} eats ${num}/${den} of ${total} ${what}. How many ${what} does ${who} eat?`;
    answer = String((total * num) / den);
  }
  return {
    key: prompt,
    task: {
      taskset: 'builtin:k12',
      domain: 'k12',
      prompt: `${prompt} Put the answer in <answer></answer>.`,
      answer,
      difficulty: kind / 3,
    },
  };
}

function choice(rng: Rng): Candidate {
  const a = rng.int(2, 13);
  const b = rng.int(2, 13);
  const right = a * b;
  const wrong = new Set<number>();
  while (wrong.size < 3) {
    const w = right + rng.pick([-b, b, -a, a, -1, 1, 10, -10]);
    if (w !== right && w > 0) wrong.add(w);
  }
  const options = rng.shuffle([right, ...wrong].map(String));
  const letter = LETTERS[options.indexOf(String(right))]!;
  const listed = options.map((o, i) => `${LETTERS[i]}) ${o}`).join('  ');
  const q = `What is ${a} x ${b}?`;
  return {
    key: `${q}|${options.join(',')}`,
    task: {
      taskset: 'builtin:k12',
      domain: 'k12',
      prompt: `${q}\n${listed}\nAnswer with the letter in <answer></answer>.`,
      answer: letter,
      choices: options,
      difficulty: 0.5,
    },
  };
}

export const k12Taskset: BuiltinTaskset = {
  name: 'k12',
  reward: 'k12',
  generate(size, seed, split) {
    return sampleSplit('k12', size, seed, split, (rng) => (rng.next() < 0.6 ? word(rng) : choice(rng)));
  },
  solve: (t) => answerTag(t.answer ?? ''),
};
