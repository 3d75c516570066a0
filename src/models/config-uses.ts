// Which run configs (`*.rft.yaml`) train an imported model, and how (LoRA or full): model.checkpoint
// resolved against the config's folder names the model's folder, or the HF-cache entry
// (models--org--name) whose snapshot it is.
import { dirname, isAbsolute, resolve, sep } from 'node:path';
import { parseLastGood } from '../config-last-good.js';
import type { ModelUse } from './model-card.js';

export interface ConfigText {
  /** Absolute path of the config. */
  file: string;
  /** Relative to the workspace (shown). */
  rel: string;
  text: string;
}

/** The model a config starts from and its LoRA rank, or undefined when it names no checkpoint (or does not parse). */
export function configModel(
  c: ConfigText,
): { checkpoint: string; lora?: { rank: number }; stale?: boolean } | undefined {
  // A config that does not parse now: its last good reading, marked stale.
  const { doc, stale } = parseLastGood(c.file, c.text);
  const model = (doc as { model?: { checkpoint?: unknown; lora?: { rank?: unknown } } } | null)?.model;
  if (!model || typeof model.checkpoint !== 'string' || !model.checkpoint) return undefined;
  const checkpoint = isAbsolute(model.checkpoint)
    ? resolve(model.checkpoint)
    : resolve(dirname(c.file), model.checkpoint);
  const rank = model.lora && typeof model.lora.rank === 'number' ? model.lora.rank : undefined;
  return { checkpoint, ...(model.lora ? { lora: { rank: rank ?? 0 } } : {}), ...(stale ? { stale } : {}) };
}

/** True when `checkpoint` names the model folder `dir`: the same folder, or the HF-cache entry holding that snapshot. */
export function namesModel(checkpoint: string, dir: string): boolean {
  if (checkpoint === dir) return true;
  return checkpoint.split(sep).pop()!.startsWith('models--') && dir.startsWith(checkpoint + sep + 'snapshots' + sep);
}

export function usesOf(dir: string, configs: ConfigText[]): ModelUse[] {
  const out: ModelUse[] = [];
  for (const c of configs) {
    const m = configModel(c);
    if (m && namesModel(m.checkpoint, dir))
      out.push({ config: c.rel, ...(m.lora ? { lora: m.lora } : {}), ...(m.stale ? { stale: true } : {}) });
  }
  return out;
}
