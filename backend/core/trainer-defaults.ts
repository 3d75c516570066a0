// The learning rate and warm-up a run trains with when its config sets none. A built-in size
// trained from scratch takes a fixed 1e-3 (what the presets were tuned with). A run from
// `model.checkpoint` (a pretrained model, full or LoRA) takes `lr: auto`: no fixed lr suits every
// pretrained model (two test models of hidden 64 and 128 wanted lrs 300x apart, issue 41), so the lr
// is set by the change each update makes to the policy (trainer/adaptive-lr.ts): it starts small
// (1e-6 full, 1e-5 LoRA: adapters start at zero and move a small subspace) and is moved every step to
// keep the update KL per token in a band around AUTO_TARGET_KL (docs/results.md says how the target
// was chosen). A fixed `trainer.lr` (or a stage's lr) still wins; `auto` may be set for a run from
// scratch too. A fixed lr from a checkpoint keeps a short warm-up and grad-norm clip 1; auto needs no
// warm-up (its start is the warm-up).
import { InputError } from './errors.js';

/** What the defaults read of a run config (validated, or as the run registry keeps it). */
export interface TrainerConfigView {
  model: { checkpoint?: string; lora?: unknown };
  trainer: {
    lr?: number | 'auto';
    warmup_steps?: number;
    grad_clip?: number;
    lr_auto?: { target_kl?: number; start?: number; min?: number; max?: number };
  };
}

export interface TrainerDefaults {
  lr: number | 'auto';
  warmup_steps: number;
  grad_clip: number;
}

/** `lr: auto`'s controller settings: its target update KL (per token), its first lr and its bounds. */
export interface AutoLrSettings {
  targetKl: number;
  start: number;
  min: number;
  max: number;
}

/** From scratch (a `model.size` preset): what the presets were tuned with. */
export const SCRATCH_DEFAULTS: TrainerDefaults = { lr: 1e-3, warmup_steps: 0, grad_clip: 1 };
/** From `model.checkpoint`, full fine-tuning or LoRA: the lr is set by the update KL. */
export const PRETRAINED_DEFAULTS: TrainerDefaults = { lr: 'auto', warmup_steps: 0, grad_clip: 1 };
/** Warm-up of a FIXED lr set by the config for a run from a checkpoint. */
export const PRETRAINED_FIXED_WARMUP = 5;
/** Update KL per token `lr: auto` keeps the policy change at (band [target/2, 2 target]); chosen on the five-model spread (docs/results.md, "lr auto, second pass"). */
export const AUTO_TARGET_KL = 1e-2;
/** Where `lr: auto` starts and its bounds, by what trains: the whole model or LoRA adapters. */
export const AUTO_LR: Record<DefaultsKind, Omit<AutoLrSettings, 'targetKl'>> = {
  scratch: { start: 1e-4, min: 1e-7, max: 1e-2 },
  'pretrained-full': { start: 1e-6, min: 1e-8, max: 1e-2 },
  'pretrained-lora': { start: 1e-5, min: 1e-7, max: 5e-3 },
};

export type DefaultsKind = 'scratch' | 'pretrained-full' | 'pretrained-lora';

/** Which defaults a config's model takes. */
export function defaultsKind(cfg: { model: { checkpoint?: string; lora?: unknown } }): DefaultsKind {
  if (!cfg.model.checkpoint) return 'scratch';
  return cfg.model.lora ? 'pretrained-lora' : 'pretrained-full';
}

export function defaultsFor(kind: DefaultsKind): TrainerDefaults {
  return kind === 'scratch' ? SCRATCH_DEFAULTS : PRETRAINED_DEFAULTS;
}

/** `lr: auto`'s settings for a model of this kind, with the config's `trainer.lr_auto` over them. */
export function autoLrFor(kind: DefaultsKind, given: TrainerConfigView['trainer']['lr_auto'] = {}): AutoLrSettings {
  const d = AUTO_LR[kind];
  const min = given.min ?? d.min;
  const max = given.max ?? d.max;
  if (min > max)
    throw new InputError(`lr_auto: min ${min} is above max ${max} (unset ones: ${fmt(d.min)} and ${fmt(d.max)})`, {
      field: 'trainer.lr_auto',
    });
  // The start is within the bounds (a bound set alone may move it).
  const start = Math.min(max, Math.max(min, given.start ?? d.start));
  return { targetKl: given.target_kl ?? AUTO_TARGET_KL, start, min, max };
}

const KIND_WORDS: Record<DefaultsKind, string> = {
  scratch: 'model trained from scratch',
  'pretrained-full': 'pretrained checkpoint, full fine-tuning',
  'pretrained-lora': 'pretrained checkpoint, LoRA',
};

export interface ResolvedTrainerSettings {
  kind: DefaultsKind;
  /** The fixed lr, or `lr: auto`'s first lr. */
  lr: number;
  /** Set when the lr is `auto`: the controller's settings. */
  auto?: AutoLrSettings;
  warmup_steps: number;
  grad_clip: number;
  /** The fields the config left unset (filled from the defaults of `kind`). */
  defaulted: (keyof TrainerDefaults)[];
  /** One line for the log: `lr auto (start 1e-6, …), warm-up 0 step(s), grad clip 1 (pretrained checkpoint, full fine-tuning: defaults for lr, …)`. */
  line: string;
}

/** The trainer's lr, warm-up and clip for a config (and a stage's own lr, which wins). */
export function resolveTrainerSettings(cfg: TrainerConfigView, stageLr?: number | 'auto'): ResolvedTrainerSettings {
  const kind = defaultsKind(cfg);
  const d = defaultsFor(kind);
  const t = cfg.trainer;
  const defaulted: (keyof TrainerDefaults)[] = [];
  let lrSetting: number | 'auto';
  if (stageLr !== undefined) lrSetting = stageLr;
  else if (t.lr !== undefined) lrSetting = t.lr;
  else {
    defaulted.push('lr');
    lrSetting = d.lr;
  }
  const auto = lrSetting === 'auto' ? autoLrFor(kind, t.lr_auto) : undefined;
  // A fixed lr from a checkpoint keeps its warm-up; auto's small start is its warm-up.
  const warmDefault = kind !== 'scratch' && !auto ? PRETRAINED_FIXED_WARMUP : d.warmup_steps;
  const pick = (k: 'warmup_steps' | 'grad_clip', v: number | undefined, dv: number): number => {
    if (v !== undefined) return v;
    defaulted.push(k);
    return dv;
  };
  const warmup_steps = pick('warmup_steps', t.warmup_steps, warmDefault);
  const grad_clip = pick('grad_clip', t.grad_clip, d.grad_clip);
  const lr = auto ? auto.start : (lrSetting as number);
  const names = { lr: 'lr', warmup_steps: 'warm-up', grad_clip: 'grad clip' };
  const why = defaulted.length
    ? `${KIND_WORDS[kind]}: defaults for ${defaulted.map((k) => names[k]).join(', ')}`
    : `${KIND_WORDS[kind]}: all set by the config`;
  const lrWords = auto
    ? `lr auto (start ${fmt(auto.start)}, kept where the update KL per token is near ${fmt(auto.targetKl)}, between ${fmt(auto.min)} and ${fmt(auto.max)})`
    : `lr ${fmt(lr)}`;
  const line = `${lrWords}${stageLr !== undefined ? " (the stage's own)" : ''}, warm-up ${warmup_steps} step(s), grad clip ${fmt(grad_clip)} (${why})`;
  return { kind, lr, ...(auto ? { auto } : {}), warmup_steps, grad_clip, defaulted, line };
}

export function fmt(x: number): string {
  return x >= 0.01 || x === 0 ? String(x) : x.toExponential().replace(/\.?0+e/, 'e');
}
