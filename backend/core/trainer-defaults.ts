// The learning rate and warm-up a run trains with when its config sets none. A built-in size
// trained from scratch takes 1e-3; a run from `model.checkpoint` (a pretrained model) takes the
// settings of RL on pretrained LLMs, where 1e-3 (or even 2e-4) wrecks the model within a few steps
// (docs/results.md, issue 23 finding 7): a small lr, a short warm-up and grad-norm clip 1, with LoRA
// about ten times the full fine-tuning lr (adapters start at zero and move a small subspace).
// How far one Adam step moves a model's outputs grows with its width (each coordinate moves by
// about lr, summed over fan-in), so the pretrained lr scales as 1/hidden size (as muP prescribes),
// anchored at 1e-5 (full) / 1e-4 (LoRA) for hidden 1024: Qwen2.5-0.5B (896) 1.1e-5, Llama-3-8B
// (4096) 2.5e-6, the range RL recipes for such models use; a tiny model gets up to 16x that.
/** What the defaults read of a run config (validated, or as the run registry keeps it). */
export interface TrainerConfigView {
  model: { checkpoint?: string; lora?: unknown };
  trainer: { lr?: number; warmup_steps?: number; grad_clip?: number };
}

export interface TrainerDefaults {
  lr: number;
  warmup_steps: number;
  grad_clip: number;
}

/** From scratch (a `model.size` preset): what the presets were tuned with. */
export const SCRATCH_DEFAULTS: TrainerDefaults = { lr: 1e-3, warmup_steps: 0, grad_clip: 1 };
/** From `model.checkpoint`, full fine-tuning, at hidden size REFERENCE_HIDDEN. */
export const PRETRAINED_FULL_DEFAULTS: TrainerDefaults = { lr: 1e-5, warmup_steps: 5, grad_clip: 1 };
/** From `model.checkpoint` with `model.lora`, at hidden size REFERENCE_HIDDEN. */
export const PRETRAINED_LORA_DEFAULTS: TrainerDefaults = { lr: 1e-4, warmup_steps: 5, grad_clip: 1 };
/** The hidden size the pretrained lrs are given for. */
export const REFERENCE_HIDDEN = 1024;
/** Bounds of the width factor REFERENCE_HIDDEN / hidden (hidden 4096 and above: 1/4; 64 and below: 16). */
export const WIDTH_FACTOR_MIN = 0.25;
export const WIDTH_FACTOR_MAX = 16;

/** The pretrained lr for a model of this hidden size (unknown: the reference's). */
export function widthScaledLr(base: number, hidden?: number): number {
  if (!hidden || !(hidden > 0)) return base;
  const f = Math.min(WIDTH_FACTOR_MAX, Math.max(WIDTH_FACTOR_MIN, REFERENCE_HIDDEN / hidden));
  return Number((base * f).toPrecision(2));
}

export type DefaultsKind = 'scratch' | 'pretrained-full' | 'pretrained-lora';

/** Which defaults a config's model takes. */
export function defaultsKind(cfg: { model: { checkpoint?: string; lora?: unknown } }): DefaultsKind {
  if (!cfg.model.checkpoint) return 'scratch';
  return cfg.model.lora ? 'pretrained-lora' : 'pretrained-full';
}

export function defaultsFor(kind: DefaultsKind): TrainerDefaults {
  return kind === 'scratch'
    ? SCRATCH_DEFAULTS
    : kind === 'pretrained-lora'
      ? PRETRAINED_LORA_DEFAULTS
      : PRETRAINED_FULL_DEFAULTS;
}

const KIND_WORDS: Record<DefaultsKind, string> = {
  scratch: 'model trained from scratch',
  'pretrained-full': 'pretrained checkpoint, full fine-tuning',
  'pretrained-lora': 'pretrained checkpoint, LoRA',
};

export interface ResolvedTrainerSettings extends TrainerDefaults {
  kind: DefaultsKind;
  /** The fields the config left unset (filled from the defaults of `kind`). */
  defaulted: (keyof TrainerDefaults)[];
  /** One line for the log: `lr 1e-4, warm-up 5 steps, grad clip 1 (pretrained checkpoint, LoRA: defaults for lr, warm-up)`. */
  line: string;
}

/**
 * The trainer's lr, warm-up and clip for a config (and a stage's own lr, which wins). `hidden`: the
 * model's hidden size, which scales a pretrained model's default lr (unknown: the reference width's).
 */
export function resolveTrainerSettings(
  cfg: TrainerConfigView,
  stageLr?: number,
  hidden?: number,
): ResolvedTrainerSettings {
  const kind = defaultsKind(cfg);
  const base = defaultsFor(kind);
  const d = kind === 'scratch' ? base : { ...base, lr: widthScaledLr(base.lr, hidden) };
  const t = cfg.trainer;
  const defaulted: (keyof TrainerDefaults)[] = [];
  const pick = <K extends keyof TrainerDefaults>(k: K, v: number | undefined): number => {
    if (v !== undefined) return v;
    defaulted.push(k);
    return d[k];
  };
  const lr = stageLr ?? pick('lr', t.lr);
  const warmup_steps = pick('warmup_steps', t.warmup_steps);
  const grad_clip = pick('grad_clip', t.grad_clip);
  const names = { lr: 'lr', warmup_steps: 'warm-up', grad_clip: 'grad clip' };
  const width =
    kind !== 'scratch' && defaulted.includes('lr') && hidden
      ? `, lr ${fmt(base.lr)} at hidden ${REFERENCE_HIDDEN} scaled to hidden ${hidden}`
      : '';
  const why = defaulted.length
    ? `${KIND_WORDS[kind]}: defaults for ${defaulted.map((k) => names[k]).join(', ')}${width}`
    : `${KIND_WORDS[kind]}: all set by the config`;
  const line = `lr ${fmt(lr)}${stageLr !== undefined ? " (the stage's own)" : ''}, warm-up ${warmup_steps} step(s), grad clip ${fmt(grad_clip)} (${why})`;
  return { kind, lr, warmup_steps, grad_clip, defaulted, line };
}

function fmt(x: number): string {
  return x >= 0.01 || x === 0 ? String(x) : x.toExponential().replace(/\.?0+e/, 'e');
}
