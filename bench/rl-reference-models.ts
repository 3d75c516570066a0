// The pretrained models `npm run bench -- rl-reference` compares GRPO on: each built here, written as a
// Hugging Face folder with its train / held-out task files, and the fixed lr both sides use (chosen
// by a quick check that it learns on both: docs/results.md).
import { lastLetterTasks, makePretrainedModel, writeLastLetterTasks } from '../tools/pretrained-model.js';

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
  build(dir: string): Promise<ReferenceModel>;
}

export const referenceModels: ReferenceModelSpec[] = [
  {
    name: 'last-h64',
    lr: 1e-3,
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
];
