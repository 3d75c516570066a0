// A model as a plain Hugging Face folder: config.json in the imported model's own architecture and
// fields (or Llama / Qwen2 / Qwen3 for a model trained here), float32 weights under their HF names,
// and the tokenizer files. transformers' from_pretrained and this project's loader both read it.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/errors.js';
import { hfTensors } from '../checkpoint.js';
import { writeHfConfig } from '../hf/config.js';
import { saveTokenizer } from '../tokenizer/io.js';
import type { Tokenizer } from '../tokenizer/types.js';
import { writeSafetensors } from '../safetensors.js';
import type { Transformer } from '../transformer.js';

export async function exportHf(model: Transformer, tok: Tokenizer | undefined, out: string): Promise<string> {
  const c = model.config;
  if (c.valueHead || c.vision) throw new InputError('a model with a value head or vision input has no plain Hugging Face causal-LM form', { field: 'model' });
  const tmp = `${out}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  writeFileSync(join(tmp, 'model.safetensors'), writeSafetensors(await hfTensors(model), { format: 'pt' }));
  const config = writeHfConfig(c, c.hfConfig, tok ? { bos: tok.bosId, eos: tok.eosId, pad: tok.padId } : undefined);
  writeFileSync(join(tmp, 'config.json'), JSON.stringify(config, null, 2) + '\n');
  if (tok) saveTokenizer(tok, tmp);
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  return out;
}
