// A small model "pretrained elsewhere", made here (shared by tests and benches, so it lives in tools/):
// a Llama-layout transformer trained by SFT on a simple task until it is partly right, with a bias RL
// can remove, then written as a Hugging Face folder (config.json, model.safetensors, tokenizer.json)
// the way an imported model arrives.
//
// Task: `last XYZ` -> Z (the last letter of a three-letter word over a..f). The demonstrations answer
// X (the first letter) instead with probability 0.75 when X is one of a..d, 0.2 otherwise: the model
// learns a shared "copy a letter" skill and a bias towards the first letter, so greedily it is right on
// words starting with e or f (and where X = Z), wrong on the others. Sampling still finds the right
// letter a quarter of the time there, which GRPO rewards. Held-out words share the rule.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Rng } from '../backend/core/rng.js';
import type { Experience } from '../backend/core/types.js';
import { encodePrompt, encodeResponse, stopTokens, taskMessages } from '../backend/model/chat.js';
import { makeConfig } from '../backend/model/config.js';
import { exportHf } from '../backend/model/export/hf.js';
import { generate } from '../backend/model/generate.js';
import { CharTokenizer } from '../backend/model/tokenizer/index.js';
import type { Tokenizer } from '../backend/model/tokenizer/types.js';
import { Transformer } from '../backend/model/transformer.js';
import { Trainer } from '../backend/trainer/trainer.js';
import { makeObjective } from '../backend/trainer/resolve-algorithm.js';

const LETTERS = 'abcdef';
/** Chance that a demonstration answers the first letter instead of the last. */
const biasOf = (word: string): number => ('abcd'.includes(word[0]!) ? 0.62 : 0.2);

export interface LastLetterTask {
  id: string;
  prompt: string;
  answer: string;
}

/** All 216 words, split by position: every fourth word is held out (54 eval, 162 train). */
export function lastLetterTasks(): { train: LastLetterTask[]; eval: LastLetterTask[] } {
  const train: LastLetterTask[] = [];
  const evalSet: LastLetterTask[] = [];
  let i = 0;
  for (const a of LETTERS)
    for (const b of LETTERS)
      for (const c of LETTERS) {
        const w = a + b + c;
        const t = { id: `w-${w}`, prompt: `last ${w}`, answer: c };
        (i++ % 4 === 3 ? evalSet : train).push(t);
      }
  return { train, eval: evalSet };
}

/** One SFT demonstration: the task's prompt in the chat layout, `answer` as the trained response. */
export function demo(tok: Tokenizer, t: { id: string; prompt: string }, answer: string, id: string): Experience {
  const promptTokens = encodePrompt(tok, taskMessages(t.prompt));
  const responseTokens = encodeResponse(tok, answer);
  return {
    id,
    taskId: t.id,
    groupId: id,
    runId: 'pretrain',
    source: 'expert',
    promptTokens,
    promptText: t.prompt,
    responseTokens,
    responseText: answer,
    actionMask: responseTokens.map(() => 1),
    logprobs: [],
    modelVersion: -1,
    reward: 1,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
  };
}

/** Greedy accuracy of `model` on `tasks` (the exact answer, then the end of the turn: `maxNewTokens` in all). */
export async function greedyAccuracy(
  model: Transformer,
  tok: Tokenizer,
  tasks: { prompt: string; answer: string }[],
  maxNewTokens = 2,
): Promise<number> {
  const prompts = tasks.map((t) => encodePrompt(tok, taskMessages(t.prompt)));
  const out = await generate(model, tok, prompts, {
    maxNewTokens,
    temperature: 0,
    stopTokens: stopTokens(tok),
    seed: 0,
  });
  let right = 0;
  out.forEach((o, i) => {
    if (o.text.trim() === tasks[i]!.answer) right++;
  });
  return right / tasks.length;
}

/**
 * Pretrains the model (SFT, `steps` batches of 32 biased demonstrations of the train words) and
 * writes it to `dir` as a Hugging Face folder. Returns the folder, the held-out greedy accuracy
 * and the task files' contents.
 */
export async function makePretrainedModel(
  dir: string,
  opts: { steps?: number; seed?: number } = {},
): Promise<{ dir: string; accuracy: number }> {
  const tasks = lastLetterTasks();
  const tok = CharTokenizer.train(['last ', LETTERS]);
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: 64,
    nLayers: 2,
    nHeads: 4,
    nKvHeads: 2,
    dFF: 128,
    maxSeqLen: 32,
  });
  const model = new Transformer(cfg, opts.seed ?? 5);
  const rng = new Rng(opts.seed ?? 5);
  const sft = new Trainer(model, makeObjective('sft'), { lr: 2e-3, padId: tok.padId, microBatchSize: 0 });
  for (let s = 0; s < (opts.steps ?? 200); s++) {
    const batch = Array.from({ length: 32 }, (_, i) => {
      const t = tasks.train[rng.int(0, tasks.train.length)]!;
      const w = t.prompt.slice(5);
      return demo(tok, t, rng.next() < biasOf(w) ? w[0]! : w[2]!, `p${s}-${i}`);
    });
    await sft.trainStep(batch);
  }
  sft.dispose();
  const accuracy = await greedyAccuracy(model, tok, tasks.eval);
  await exportHf(model, tok, dir);
  model.dispose();
  return { dir, accuracy };
}

/** The task files a run reads: train.jsonl and eval.jsonl in `dir`. */
export function writeLastLetterTasks(dir: string): { train: string; eval: string } {
  mkdirSync(dir, { recursive: true });
  const tasks = lastLetterTasks();
  const line = (t: LastLetterTask) => JSON.stringify({ id: t.id, prompt: t.prompt, answer: t.answer, domain: 'text' });
  const train = join(dir, 'train.jsonl');
  const evalFile = join(dir, 'eval.jsonl');
  writeFileSync(train, tasks.train.map(line).join('\n') + '\n');
  writeFileSync(evalFile, tasks.eval.map(line).join('\n') + '\n');
  return { train, eval: evalFile };
}
