// A LoRA checkpoint's adapters as a PEFT folder (adapter_config.json + adapter_model.safetensors):
// PeftModel.from_pretrained(base, DIR) in Python, or `model.checkpoint` + these files here.
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { InputError } from '../../core/errors.js';
import { writeAdapterFiles } from '../lora-files.js';
import type { Transformer } from '../transformer.js';

/** `baseModel`: adapter_config.json's base_model_name_or_path (the folder or hub id the base came from). */
export async function exportPeft(model: Transformer, out: string, baseModel: string): Promise<string> {
  if (!model.lora) throw new InputError('the checkpoint has no LoRA adapters (it was trained without model.lora): export it as hf or gguf', { field: 'model.lora' });
  const tmp = `${out}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  await writeAdapterFiles(model, tmp, baseModel);
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  return out;
}
