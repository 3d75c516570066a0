// Export Checkpoint…: the formats a checkpoint can be written in (PEFT only for a LoRA checkpoint)
// and the folder name each export gets. Pure, tested directly.
export interface ExportFormat {
  label: string;
  detail: string;
  format: 'hf' | 'peft' | 'gguf';
  dtype: 'f32' | 'f16';
}

/**
 * What a checkpoint can be written as: PEFT needs LoRA adapters; GGUF needs the model's own (Hugging
 * Face, byte-level BPE) tokenizer, so a model trained from scratch with this project's char / BPE
 * tokenizer is not offered it (the backend would refuse it by name).
 */
export function exportFormats(lora: boolean, hfTokenizer = true): ExportFormat[] {
  const all: ExportFormat[] = [
    {
      label: 'Hugging Face folder',
      detail: `${lora ? 'LoRA merged into the weights; ' : ''}the model's own architecture, tensor names and config, with its tokenizer files (float32)`,
      format: 'hf',
      dtype: 'f32',
    },
    {
      label: 'PEFT adapters',
      detail: 'adapter_config.json + adapter_model.safetensors, to load on the base model with PEFT',
      format: 'peft',
      dtype: 'f32',
    },
    {
      label: 'GGUF F32',
      detail: `one model.gguf for llama.cpp${lora ? ' (LoRA merged)' : ''}, float32`,
      format: 'gguf',
      dtype: 'f32',
    },
    {
      label: 'GGUF F16',
      detail: `one model.gguf for llama.cpp${lora ? ' (LoRA merged)' : ''}, float16 (half the size)`,
      format: 'gguf',
      dtype: 'f16',
    },
  ];
  return all.filter((f) => (f.format !== 'peft' || lora) && (f.format !== 'gguf' || hfTokenizer));
}

/** `tiny-v60-gguf-f16`, `tiny-v60-hf`; a checkpoint of no run: its folder's name. */
export function exportFolderName(ck: { runName?: string; version?: number; path: string }, f: ExportFormat): string {
  const base =
    ck.version !== undefined
      ? `${ck.runName ?? 'run'}-v${ck.version}`
      : (ck.path.split(/[\\/]/).filter(Boolean).pop() ?? 'checkpoint');
  const slug = base.toLowerCase().replace(/[^a-z0-9._-]+/g, '-');
  return `${slug}-${f.format}${f.format === 'gguf' ? `-${f.dtype}` : ''}`;
}

/** The files an export writes into its folder: what replacing an existing folder overwrites. */
export function exportWrites(format: ExportFormat['format']): string {
  return format === 'hf'
    ? 'config.json, model.safetensors and the tokenizer files'
    : format === 'peft'
      ? 'adapter_config.json and adapter_model.safetensors'
      : 'model.gguf';
}
