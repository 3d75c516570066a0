// The tasks the spread of pretrained models (./index.ts) is pretrained on, each with a bias RL can
// remove: the demonstrations answer a plausible wrong thing with probability > 1/2 on part of the
// tasks (so greedily the model is wrong there) and < 1/2 elsewhere (right there). Sampling still finds
// the right answer a good share of the time on the biased part, which GRPO rewards. Every task set is
// enumerated and split by position: every fourth task is held out.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Rng } from '../../backend/core/rng.js';

export interface SpreadTask {
  id: string;
  prompt: string;
  answer: string;
}

export interface TaskFamily {
  name: string;
  /** One line on the task and its bias, for the results table. */
  describe: string;
  all: SpreadTask[];
  /** A demonstration's answer for `t`: the right one, or the biased one with the family's odds. */
  demo(t: SpreadTask, rng: Rng): string;
  /** Longest answer in tokens of a char tokenizer (+1 for the end marker is added by the run config). */
  maxAnswerChars: number;
}

const LETTERS = 'abcdef';
const words3 = (): string[] => {
  const out: string[] = [];
  for (const a of LETTERS) for (const b of LETTERS) for (const c of LETTERS) out.push(a + b + c);
  return out;
};
const biased = (rng: Rng, p: number, wrong: string, right: string) => (rng.next() < p ? wrong : right);

/** `last abc` -> c; biased to the first letter when it is one of a..d (tools/pretrained-model.ts's task). */
const lastLetter: TaskFamily = {
  name: 'last-letter',
  describe: 'last letter of a 3-letter word; bias: the first letter (p 0.62 on a..d words)',
  all: words3().map((w) => ({ id: `last-${w}`, prompt: `last ${w}`, answer: w[2]! })),
  demo: (t, rng) => {
    const w = t.prompt.slice(5);
    return biased(rng, 'abcd'.includes(w[0]!) ? 0.62 : 0.2, w[0]!, w[2]!);
  },
  maxAnswerChars: 1,
};

/** `copy abc` -> abc; biased to dropping the last letter when it is d..f. */
const copy: TaskFamily = {
  name: 'copy',
  describe: 'copy a 3-letter word; bias: drop its last letter (p 0.65 when it is d..f)',
  all: words3().map((w) => ({ id: `copy-${w}`, prompt: `copy ${w}`, answer: w })),
  demo: (t, rng) => biased(rng, 'def'.includes(t.answer[2]!) ? 0.65 : 0.15, t.answer.slice(0, 2), t.answer),
  maxAnswerChars: 3,
};

/** `rev abc` -> cba; biased to copying the word when it starts with a..c. */
const reverse: TaskFamily = {
  name: 'reverse',
  describe: 'reverse a 3-letter word; bias: copy it unreversed (p 0.65 on a..c words)',
  all: words3().map((w) => ({ id: `rev-${w}`, prompt: `rev ${w}`, answer: [...w].reverse().join('') })),
  demo: (t, rng) => {
    const w = t.prompt.slice(4);
    return biased(rng, 'abc'.includes(w[0]!) ? 0.65 : 0.15, w, t.answer);
  },
  maxAnswerChars: 3,
};

/** `max 3 7 5` -> 7 (three distinct digits 0..7); biased to the first option when it is even. */
const choice: TaskFamily = {
  name: 'choice-max',
  describe: 'choose the largest of three digits; bias: the first option (p 0.65 when it is even)',
  all: (() => {
    const out: SpreadTask[] = [];
    for (let a = 0; a < 8; a++)
      for (let b = 0; b < 8; b++)
        for (let c = 0; c < 8; c++)
          if (a !== b && b !== c && a !== c)
            out.push({ id: `max-${a}${b}${c}`, prompt: `max ${a} ${b} ${c}`, answer: String(Math.max(a, b, c)) });
    return out;
  })(),
  demo: (t, rng) => {
    const first = t.prompt[4]!;
    return biased(rng, Number(first) % 2 === 0 ? 0.65 : 0.15, first, t.answer);
  },
  maxAnswerChars: 1,
};

/** `mid abc` -> b; biased to the last letter when the middle one is a..c. */
const middleLetter: TaskFamily = {
  name: 'middle-letter',
  describe: 'middle letter of a 3-letter word; bias: the last letter (p 0.65 when the middle is a..c)',
  all: words3().map((w) => ({ id: `mid-${w}`, prompt: `mid ${w}`, answer: w[1]! })),
  demo: (t, rng) => {
    const w = t.prompt.slice(4);
    return biased(rng, 'abc'.includes(w[1]!) ? 0.65 : 0.15, w[2]!, w[1]!);
  },
  maxAnswerChars: 1,
};

export const TASK_FAMILIES = { lastLetter, copy, reverse, choice, middleLetter } as const;

/** Train and held-out split: every fourth task is held out. */
export function splitTasks(f: TaskFamily): { train: SpreadTask[]; eval: SpreadTask[] } {
  const train: SpreadTask[] = [];
  const evalSet: SpreadTask[] = [];
  f.all.forEach((t, i) => (i % 4 === 3 ? evalSet : train).push(t));
  return { train, eval: evalSet };
}

/** The task files a run reads: train.jsonl and eval.jsonl in `dir`. */
export function writeFamilyTasks(f: TaskFamily, dir: string): { train: string; eval: string } {
  mkdirSync(dir, { recursive: true });
  const { train, eval: evalSet } = splitTasks(f);
  const line = (t: SpreadTask) => JSON.stringify({ id: t.id, prompt: t.prompt, answer: t.answer, domain: 'text' });
  const files = { train: join(dir, 'train.jsonl'), eval: join(dir, 'eval.jsonl') };
  writeFileSync(files.train, train.map(line).join('\n') + '\n');
  writeFileSync(files.eval, evalSet.map(line).join('\n') + '\n');
  return files;
}
