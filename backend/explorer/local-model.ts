// The policy being trained, as a rollout model: generation with the KV cache on the local engine.
import { generate, type GenerateOptions, type Generation } from '../model/generate.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import type { Transformer } from '../model/transformer.js';
import type { TaskImage } from '../core/types.js';
import { tf } from '../model/engine.js';
import { patchTensor } from '../model/patchify.js';
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

  embedImages(images: TaskImage[]): tf.Tensor3D {
    const v = this.model.config.vision;
    if (!v) throw new Error('this model has no vision input (config.vision)');
    const patches = patchTensor(images, v.patchSize);
    try {
      return tf.tidy(() => this.model.embedPatches(patches));
    } finally {
      patches.dispose();
    }
  }

  generate(prompts: number[][], opts: GenerateOptions): Promise<Generation[]> {
    return generate(this.model, this.tokenizer, prompts, opts);
  }
}
