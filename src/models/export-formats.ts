// Export Checkpoint…: the formats a checkpoint can be written in (PEFT only for a LoRA checkpoint)
// and the folder name each export gets. Pure, tested directly.
export interface ExportFormat {
  label: string;
  detail: string;
  format: 'hf' | 'peft' | 'gguf';
  dtype: 'f32' | 'f16';
}

export function exportFormats(lora: boolean): ExportFormat[] {
  const all: ExportFormat[] = [
    { label: 'Hugging Face folder', detail: `${lora ? 'LoRA merged into the weights; ' : ''}the model's own architecture, tensor names and config, with its tokenizer files (float32)`, format: 'hf', dtype: 'f32' },
    { label: 'PEFT adapters', detail: 'adapter_config.json + adapter_model.safetensors, to load on the base model with PEFT', format: 'peft', dtype: 'f32' },
    { label: 'GGUF F32', detail: `one model.gguf for llama.cpp${lora ? ' (LoRA merged)' : ''}, float32`, format: 'gguf', dtype: 'f32' },
    { label: 'GGUF F16', detail: `one model.gguf for llama.cpp${lora ? ' (LoRA merged)' : ''}, float16 (half the size)`, format: 'gguf', dtype: 'f16' },
  ];
  return lora ? all : all.filter((f) => f.format !== 'peft');
}

/** `tiny-v60-gguf-f16`, `tiny-v60-hf`; a checkpoint of no run: its folder's name. */
export function exportFolderName(ck: { runName?: string; version?: number; path: string }, f: ExportFormat): string {
  const base = ck.version !== undefined ? `${ck.runName ?? 'run'}-v${ck.version}` : (ck.path.split(/[\\/]/).filter(Boolean).pop() ?? 'checkpoint');
  const slug = base.toLowerCase().replace(/[^a-z0-9._-]+/g, '-');
  return `${slug}-${f.format}${f.format === 'gguf' ? `-${f.dtype}` : ''}`;
}
