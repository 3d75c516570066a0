// A spread of small models "pretrained elsewhere", made here (issue 41 item 2): Llama and Qwen2
// layouts (Qwen2: q/k/v biases), hidden 64 to 512, 2 to 8 layers, char and byte-level BPE tokenizers,
// tied and untied heads, each SFT-trained on its own task with its own bias (./tasks.ts) until it is
// partly right, then written as a Hugging Face folder (config.json, model.safetensors, tokenizer.json)
// that a run imports with `model.checkpoint`, as a user's model. Used by `npm run bench -- lr-auto`
// and the tests. Folders are cached under the system temp dir, keyed by SPREAD_VERSION (bump it when a
// spec or the pretraining changes), so a bench run does not rebuild them.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Rng } from '../../backend/core/rng.js';
import { countParams, makeConfig } from '../../backend/model/config.js';
import { exportHf } from '../../backend/model/export/hf.js';
import { CharTokenizer, trainBpe } from '../../backend/model/tokenizer/index.js';
import type { Tokenizer } from '../../backend/model/tokenizer/types.js';
import { Transformer } from '../../backend/model/transformer.js';
import { demo, greedyAccuracy } from '../pretrained-model.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import { TASK_FAMILIES, splitTasks, type SpreadTask, type TaskFamily } from './tasks.js';

export { TASK_FAMILIES, splitTasks, writeFamilyTasks, type TaskFamily } from './tasks.js';

/** Bump when a spec, a task or the pretraining changes: cached folders of another version are not used. */
export const SPREAD_VERSION = 1;

export interface SpreadSpec {
  name: string;
  layout: 'llama' | 'qwen2';
  tokenizer: 'char' | 'bpe';
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  ffn: number;
  tied: boolean;
  task: TaskFamily;
  /** SFT pretraining: steps of 32 demonstrations at this lr. */
  steps: number;
  lr: number;
  seed: number;
}

export const SPREAD: readonly SpreadSpec[] = [
  {
    name: 'last-h64',
    layout: 'llama',
    tokenizer: 'char',
    hidden: 64,
    layers: 2,
    heads: 4,
    kvHeads: 2,
    ffn: 128,
    tied: true,
    task: TASK_FAMILIES.lastLetter,
    steps: 200,
    lr: 2e-3,
    seed: 5,
  },
  {
    name: 'copy-h128',
    layout: 'qwen2',
    tokenizer: 'bpe',
    hidden: 128,
    layers: 4,
    heads: 4,
    kvHeads: 2,
    ffn: 256,
    tied: false,
    task: TASK_FAMILIES.copy,
    steps: 500,
    lr: 2e-3,
    seed: 7,
  },
  {
    name: 'rev-h256',
    layout: 'qwen2',
    tokenizer: 'char',
    hidden: 256,
    layers: 3,
    heads: 8,
    kvHeads: 4,
    ffn: 512,
    tied: true,
    task: TASK_FAMILIES.reverse,
    steps: 200,
    lr: 1e-3,
    seed: 11,
  },
  {
    name: 'max-h512',
    layout: 'llama',
    tokenizer: 'bpe',
    hidden: 512,
    layers: 2,
    heads: 8,
    kvHeads: 4,
    ffn: 1024,
    tied: false,
    task: TASK_FAMILIES.choice,
    steps: 150,
    lr: 5e-4,
    seed: 13,
  },
  {
    name: 'mid-h96x8',
    layout: 'llama',
    tokenizer: 'char',
    hidden: 96,
    layers: 8,
    heads: 4,
    kvHeads: 2,
    ffn: 192,
    tied: true,
    task: TASK_FAMILIES.middleLetter,
    steps: 200,
    lr: 1e-3,
    seed: 17,
  },
];

export function spreadSpec(name: string): SpreadSpec {
  const s = SPREAD.find((x) => x.name === name);
  if (!s) throw new Error(`no spread model '${name}' (have ${SPREAD.map((x) => x.name).join(', ')})`);
  return s;
}

function tokenizerFor(spec: SpreadSpec): Tokenizer {
  const texts = spec.task.all.flatMap((t) => [t.prompt, t.answer]);
  if (spec.tokenizer === 'char') return CharTokenizer.train(texts);
  // A small byte-level BPE: the 264 base tokens and 8 merges learnt from the task's text
  // (the prompt's keyword and space+letter): more merges make whole-word tokens, whose copy is a lookup
  // that does not carry to held-out words.
  return trainBpe(texts, { vocabSize: 272, minFrequency: 2 });
}

/** Greedy accuracy of `model` on `tasks` (exact answer, then the end of the turn). */
export function spreadAccuracy(
  model: Transformer,
  tok: Tokenizer,
  family: TaskFamily,
  tasks: SpreadTask[],
): Promise<number> {
  return greedyAccuracy(model, tok, tasks, family.maxAnswerChars + 1);
}

export interface SpreadModel {
  spec: SpreadSpec;
  /** The Hugging Face folder (model.checkpoint). */
  dir: string;
  /** Greedy held-out accuracy after pretraining. */
  accuracy: number;
  params: number;
  vocab: number;
}

/** SFT-pretrains `spec` and writes it to `dir` (a fresh folder). */
async function pretrain(spec: SpreadSpec, dir: string): Promise<Omit<SpreadModel, 'dir'>> {
  const tok = tokenizerFor(spec);
  const { train, eval: evalSet } = splitTasks(spec.task);
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: spec.hidden,
    nLayers: spec.layers,
    nHeads: spec.heads,
    nKvHeads: spec.kvHeads,
    dFF: spec.ffn,
    maxSeqLen: 32,
    tieEmbeddings: spec.tied,
    attnBias: spec.layout === 'qwen2',
  });
  const model = new Transformer(cfg, spec.seed);
  const rng = new Rng(spec.seed);
  const sft = new Trainer(model, makeObjective('sft'), { lr: spec.lr, padId: tok.padId, microBatchSize: 0 });
  for (let s = 0; s < spec.steps; s++) {
    const batch = Array.from({ length: 32 }, (_, i) => {
      const t = train[rng.int(0, train.length)]!;
      return demo(tok, t, spec.task.demo(t, rng), `p${s}-${i}`);
    });
    await sft.trainStep(batch);
  }
  sft.dispose();
  const accuracy = await spreadAccuracy(model, tok, spec.task, evalSet);
  const params = countParams(cfg);
  await exportHf(model, tok, dir);
  model.dispose();
  return { spec, accuracy, params, vocab: tok.vocabSize };
}

/** The cache folder of the spread (RFT_SPREAD_CACHE, or the system temp dir). */
export function spreadCacheDir(): string {
  return process.env.RFT_SPREAD_CACHE ?? join(tmpdir(), `rft-pretrained-spread-v${SPREAD_VERSION}`);
}

/**
 * The model `name` as a Hugging Face folder: from the cache when built by this SPREAD_VERSION, else
 * pretrained now and put in the cache (built beside it and renamed in, so a half-written folder is
 * never read). `cacheDir` overrides the cache (a test's own temp dir builds afresh).
 */
export async function spreadModel(name: string, cacheDir = spreadCacheDir()): Promise<SpreadModel> {
  const spec = spreadSpec(name);
  const dir = join(cacheDir, spec.name);
  const info = join(dir, 'spread.json');
  if (existsSync(info)) {
    const meta = JSON.parse(readFileSync(info, 'utf8')) as Omit<SpreadModel, 'spec' | 'dir'>;
    return { spec, dir, ...meta };
  }
  mkdirSync(cacheDir, { recursive: true });
  const tmp = join(cacheDir, `.${spec.name}-${process.pid}-${Date.now()}`);
  const built = await pretrain(spec, tmp);
  const meta = { accuracy: built.accuracy, params: built.params, vocab: built.vocab };
  writeFileSync(join(tmp, 'spread.json'), JSON.stringify(meta) + '\n');
  try {
    renameSync(tmp, dir);
  } catch {
    // Another process put it in place first: use theirs.
    rmSync(tmp, { recursive: true, force: true });
  }
  return { spec, dir, ...meta };
}
