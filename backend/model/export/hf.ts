// A model as a plain Hugging Face folder: config.json in the imported model's own architecture and
// fields (or Llama / Qwen2 / Qwen3 for a model trained here), float32 weights under their HF names,
// and the tokenizer files. transformers' from_pretrained and this project's loader both read it.
// Written beside OUT and put in place by target.ts (nothing of the user's in OUT is removed).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/errors.js';
import { hfTensors } from '../checkpoint.js';
import { writeHfConfig } from '../hf/config.js';
import { saveTokenizer } from '../tokenizer/io.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { writeSafetensors } from '../safetensors.js';
import type { Transformer } from '../transformer.js';
import { writeExport, type TargetOptions } from './target.js';

export async function exportHf(
  model: Transformer,
  tok: Tokenizer | undefined,
  out: string,
  target: Omit<TargetOptions, 'format'> = { force: false },
): Promise<string> {
  const c = model.config;
  if (c.valueHead || c.vision)
    throw new InputError('a model with a value head or vision input has no plain Hugging Face causal-LM form', {
      field: 'model',
    });
  await writeExport(out, { ...target, format: 'hf' }, async (dir) => {
    writeFileSync(join(dir, 'model.safetensors'), writeSafetensors(await hfTensors(model), { format: 'pt' }));
    const config = writeHfConfig(c, c.hfConfig, tok ? { bos: tok.bosId, eos: tok.eosId, pad: tok.padId } : undefined);
    writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2) + '\n');
    if (tok) saveTokenizer(tok, dir);
  });
  return out;
}
