// The policy being trained, as a rollout model: generation with the KV cache on the local engine.
import { generate, type GenerateOptions, type Generation } from '../model/generate.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import type { Transformer } from '../model/transformer.js';
import type { RolloutModel } from './workflow.js';

export class LocalRolloutModel implements RolloutModel {
  constructor(
    public model: Transformer,
    readonly tokenizer: Tokenizer,
    public version: number,
  ) {}

  get maxSeqLen(): number {
    return this.model.config.maxSeqLen;
  }

  generate(prompts: number[][], opts: GenerateOptions): Promise<Generation[]> {
    return generate(this.model, this.tokenizer, prompts, opts);
  }
}
