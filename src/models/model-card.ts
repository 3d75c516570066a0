// What the Models view shows of an imported model and what Start Training writes for it. Pure (no
// vscode) so wording and the config lines are tested directly.
import type { ImportedModel } from '../../backend/core/protocol.js';
import { AUTO_TARGET_KL, defaultsFor, fmt } from '../../backend/core/trainer-defaults.js';

/** 494M, 1.2B, 135M, 4.8M, 53k */
export function formatParams(n: number): string {
  if (n >= 1e9) return `${trim(n / 1e9)}B`;
  if (n >= 1e6) return `${trim(n / 1e6)}M`;
  if (n >= 1e3) return `${trim(n / 1e3)}k`;
  return String(n);
}
function trim(x: number): string {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1).replace(/\.0$/, '') : x.toFixed(2).replace(/\.?0+$/, '');
}

/** How a run config uses a model: LoRA (with its rank) or full fine-tuning. */
export interface ModelUse {
  /** The config file, relative to the workspace. */
  config: string;
  lora?: { rank: number };
  /** The config does not parse now: this is its last good reading. */
  stale?: boolean;
}

export function trainingLine(uses: ModelUse[]): string {
  if (!uses.length) return 'no run config uses it yet';
  return uses
    .map(
      (u) =>
        `${u.lora ? `LoRA rank ${u.lora.rank}` : 'full fine-tuning'} (${u.config}${u.stale ? ': it does not parse now, as last read' : ''})`,
    )
    .join('; ');
}

export interface CardRow {
  label: string;
  value: string;
}

/** The card's rows: architecture, size, dtype, tokenizer, LoRA or full per run config, path. */
export function cardRows(m: ImportedModel, uses: ModelUse[]): CardRow[] {
  const tok = m.tokenizer
    ? `${m.tokenizer.kind === 'hf' ? 'tokenizer.json' : m.tokenizer.kind}, ${m.tokenizer.vocab.toLocaleString('en-US')} tokens${m.chatTemplate && m.chatTemplate !== 'rft' ? ', chat template' : ''}`
    : 'none (the folder has no tokenizer.json)';
  return [
    {
      label: 'Architecture',
      value: `${m.architecture} · ${m.layers} layers, hidden ${m.hidden}, ${m.heads} heads (${m.kvHeads} KV)`,
    },
    { label: 'Size', value: `${formatParams(m.parameters)} parameters (${m.parameters.toLocaleString('en-US')})` },
    { label: 'dtype', value: m.dtype },
    { label: 'Tokenizer', value: tok },
    { label: 'Training', value: m.lora ? `LoRA checkpoint (rank ${m.lora.rank})` : trainingLine(uses) },
    { label: 'Path', value: m.dir },
  ];
}

/** The view's one-line description of a model: `Qwen2ForCausalLM · 494M · BF16`. */
export function modelSummary(m: ImportedModel): string {
  return `${m.architecture} · ${formatParams(m.parameters)} · ${m.dtype}`;
}

/** The built-in sizes (backend/model/config.ts MODEL_PRESETS; a test keeps the two lists equal). */
export const PRESETS = ['tiny-0.4m', 'small-3m', 'base-10m', 'medium-25m', 'large-100m'] as const;

/** A preset trained from scratch, or an imported model (its config path and name, full or LoRA). */
export type TemplateModel = { preset: string } | { checkpoint: string; name: string; lora: boolean };

/** LoRA settings Start Training writes for an imported model (PEFT's usual small default). */
export const DEFAULT_LORA = { rank: 8, alpha: 16 };

/** The config's `model:` (and, for a preset, `tokenizer:`) lines. An imported model brings its own tokenizer. */
export function modelLines(m: TemplateModel): string[] {
  if ('preset' in m) return ['model:', `  size: ${m.preset}`, '  max_seq_len: 256', 'tokenizer:', '  kind: char'];
  const lines = [
    'model:',
    `  # ${m.name}: its own tokenizer and chat template`,
    `  checkpoint: ${JSON.stringify(m.checkpoint)}`,
  ];
  if (m.lora)
    lines.push(
      '  lora:  # adapters only; remove this block for full fine-tuning',
      `    rank: ${DEFAULT_LORA.rank}`,
      `    alpha: ${DEFAULT_LORA.alpha}`,
    );
  return lines;
}

/**
 * The `trainer:` lines for a pretrained model, written out with why: `lr: auto` (the lr set by how
 * much each update changes the policy: backend/core/trainer-defaults.ts; no fixed lr suits every
 * pretrained model), grad clip 1. A preset trained from scratch keeps the schema's defaults (no lines).
 */
export function trainerLines(m: TemplateModel): string[] {
  if ('preset' in m) return [];
  const d = defaultsFor(m.lora ? 'pretrained-lora' : 'pretrained-full');
  return [
    `  # ${m.name} is pretrained: a fixed lr that suits one model wrecks or stalls another, so the lr is`,
    `  # set each step by how much the update changes the policy (KL per token near ${fmt(AUTO_TARGET_KL)}). The run warns`,
    '  # in its log and on the dashboard when the policy collapses or stops learning. A number here fixes the lr.',
    `  lr: ${d.lr}`,
    `  grad_clip: ${d.grad_clip}`,
  ];
}

/** A file name for a model's config: `train-qwen2.5-0.5b-instruct.rft.yaml`. */
export function configNameFor(name: string): string {
  const slug =
    name
      .split('/')
      .pop()!
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'model';
  return `train-${slug}.rft.yaml`;
}
