// The example's model: a tiny Qwen2 (q/k/v biases, tied head; hidden 32, 2 layers) with random
// weights, written as a Hugging Face folder the way transformers saves one (config.json,
// model.safetensors, generation_config.json, and the real Qwen3 tokenizer.json / tokenizer_config.json
// with its chat template). No weights can be downloaded here; a real folder from the HF cache
// (e.g. ~/.cache/huggingface/hub/models--Qwen--Qwen2.5-0.5B-Instruct) goes in model.checkpoint the same way.
//   npx tsx configs/examples/hf-lora/make-model.ts [OUT_DIR]     (default: configs/examples/hf-lora/model)
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { makeHfModel, type HfModelSpec, TINY_QWEN2 } from '../../../tools/hf-model.js';

export const EXAMPLE_MODEL: HfModelSpec = { ...TINY_QWEN2, seed: 14 };

export function makeExampleModel(out: string): string {
  return makeHfModel(out, EXAMPLE_MODEL);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const out = process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), 'model');
  console.log(makeExampleModel(out));
}
