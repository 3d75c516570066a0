// The pretrained models `npm run bench -- rl-reference` compares GRPO on: each built here, written as a
// Hugging Face folder with its train / held-out task files, and the fixed lr both sides use (chosen
// by a quick check that it learns on both: docs/results.md). The default set is the model of
// tools/pretrained-model.ts and copy-h128 of the spread (Qwen2 layout, byte-level BPE, untied head);
// BENCH_MODELS names others of the spread (tools/pretrained-spread).
import { lastLetterTasks, makePretrainedModel, writeLastLetterTasks } from '../tools/pretrained-model.js';
import { SPREAD, splitTasks, spreadModel, writeFamilyTasks } from '../tools/pretrained-spread/index.js';

export interface ReferenceTask {
  prompt: string;
  answer: string;
}

export interface ReferenceModel {
  name: string;
  about: string;
  dir: string;
  files: { train: string; eval: string };
  tasks: { train: ReferenceTask[]; eval: ReferenceTask[] };
  /** Sampling and eval budget: the longest answer and its end token. */
  maxNewTokens: number;
}

export interface ReferenceModelSpec {
  name: string;
  lr: number;
  /** Run when BENCH_MODELS names none. */
  inDefault: boolean;
  build(dir: string): Promise<ReferenceModel>;
}

/** The fixed lr of each spread model here (one that learns on both sides: docs/results.md). */
const SPREAD_LR: Record<string, number> = { 'copy-h128': 2e-4 };

export const referenceModels: ReferenceModelSpec[] = [
  {
    name: 'last-h64',
    lr: 1e-3,
    inDefault: true,
    async build(dir) {
      const m = await makePretrainedModel(`${dir}/model`);
      return {
        name: 'last-h64',
        about: 'Llama layout, hidden 64, 2 layers, char tokenizer, tied head; last letter of a word',
        dir: m.dir,
        files: writeLastLetterTasks(`${dir}/data`),
        tasks: lastLetterTasks(),
        maxNewTokens: 3,
      };
    },
  },
  ...SPREAD.map(
    (spec): ReferenceModelSpec => ({
      name: spec.name === 'last-h64' ? 'spread-last-h64' : spec.name,
      lr: SPREAD_LR[spec.name] ?? 1e-3,
      inDefault: spec.name === 'copy-h128',
      async build(dir) {
        const m = await spreadModel(spec.name);
        return {
          name: spec.name,
          about: `${spec.layout} layout, hidden ${spec.hidden}, ${spec.layers} layers, ${spec.tokenizer} tokenizer, ${spec.tied ? 'tied' : 'untied'} head; ${spec.task.describe}`,
          dir: m.dir,
          files: writeFamilyTasks(spec.task, `${dir}/data`),
          tasks: splitTasks(spec.task),
          maxNewTokens: spec.task.maxAnswerChars + 1,
        };
      },
    }),
  ),
];
