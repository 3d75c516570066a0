// A LoRA checkpoint's adapters as a PEFT folder (adapter_config.json + adapter_model.safetensors):
// PeftModel.from_pretrained(base, DIR) in Python, or `model.checkpoint` + these files here.
// Written beside OUT and put in place by target.ts (nothing of the user's in OUT is removed).
import { InputError } from '../../core/errors.js';
import { writeAdapterFiles } from '../lora-files.js';
import type { Transformer } from '../transformer.js';
import { writeExport, type TargetOptions } from './target.js';

/** `baseModel`: adapter_config.json's base_model_name_or_path (the folder or hub id the base came from). */
export async function exportPeft(
  model: Transformer,
  out: string,
  baseModel: string,
  target: Omit<TargetOptions, 'format'> = { force: false },
): Promise<string> {
  if (!model.lora)
    throw new InputError(
      'the checkpoint has no LoRA adapters (it was trained without model.lora): export it as hf or gguf',
      { field: 'model.lora' },
    );
  await writeExport(out, { ...target, format: 'peft' }, (dir) => writeAdapterFiles(model, dir, baseModel));
  return out;
}
