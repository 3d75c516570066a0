// LoRA (Hu et al. 2021, as in PEFT): each targeted linear layer W gets y = x W + (alpha / r) (drop(x) A) B
// with A [in, r] and B [r, out] (B starts at zero, so the adapted model starts equal to the base).
// Only A and B train; the base weights are frozen tfjs variables that get no gradient and no
// optimiser state. Adapters are named as PEFT names them (minus its `base_model.model.` prefix).
import { LORA_TARGETS, LoraConfigSchema, type LoraConfigInput, type LoraTarget } from '../core/lora-config.js';
import { headDim, type ModelConfig } from './config.js';
import { InputError } from '../core/errors.js';
import type { Transformer } from './transformer.js';

export { LORA_TARGETS, LoraConfigSchema, type LoraConfigInput, type LoraTarget } from '../core/lora-config.js';
export interface LoraConfig {
  rank: number;
  alpha: number;
  dropout: number;
  target_modules: LoraTarget[];
}

export function makeLoraConfig(input: LoraConfigInput): LoraConfig {
  const c = LoraConfigSchema.parse(input);
  return {
    rank: c.rank,
    alpha: c.alpha ?? 2 * c.rank,
    dropout: c.dropout,
    target_modules: [...new Set(c.target_modules)],
  };
}

export function loraScale(c: LoraConfig): number {
  return c.alpha / c.rank;
}

export interface LoraModule {
  /** HF module name, e.g. `model.layers.0.self_attn.q_proj` (its weight is `<module>.weight`). */
  module: string;
  in: number;
  out: number;
}

/** The linear layers a LoRA config adapts, in layer order. */
export function loraModules(c: ModelConfig, lora: LoraConfig): LoraModule[] {
  const hd = headDim(c);
  const dims: Record<LoraTarget, [string, number, number]> = {
    q_proj: ['self_attn', c.dModel, c.nHeads * hd],
    k_proj: ['self_attn', c.dModel, c.nKvHeads * hd],
    v_proj: ['self_attn', c.dModel, c.nKvHeads * hd],
    o_proj: ['self_attn', c.nHeads * hd, c.dModel],
    gate_proj: ['mlp', c.dModel, c.dFF],
    up_proj: ['mlp', c.dModel, c.dFF],
    down_proj: ['mlp', c.dFF, c.dModel],
  };
  const out: LoraModule[] = [];
  for (let i = 0; i < c.nLayers; i++) {
    for (const t of LORA_TARGETS) {
      if (!lora.target_modules.includes(t)) continue;
      const [block, inDim, outDim] = dims[t];
      out.push({ module: `model.layers.${i}.${block}.${t}`, in: inDim, out: outDim });
    }
  }
  return out;
}

/** Adapter tensor names of a module (in memory: A [in, r], B [r, out]; PEFT files: A [r, in], B [out, r]). */
export const loraA = (module: string) => `${module}.lora_A.weight`;
export const loraB = (module: string) => `${module}.lora_B.weight`;

/** PEFT's tensor-name prefix in adapter_model.safetensors. */
export const PEFT_PREFIX = 'base_model.model.';

/** adapter_config.json in PEFT's layout. */
export function peftAdapterConfig(lora: LoraConfig, baseModel: string): Record<string, unknown> {
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModel,
    r: lora.rank,
    lora_alpha: lora.alpha,
    lora_dropout: lora.dropout,
    target_modules: lora.target_modules,
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    modules_to_save: null,
    layers_to_transform: null,
    layers_pattern: null,
    rank_pattern: {},
    alpha_pattern: {},
    use_rslora: false,
    use_dora: false,
    revision: null,
  };
}

/** Reads adapter_config.json back; refuses what this project cannot reproduce by field name. */
export function parsePeftAdapterConfig(raw: Record<string, unknown>, file: string): LoraConfig {
  const fail = (field: string, msg: string): never => {
    throw new InputError(msg, { file, field });
  };
  if (raw.peft_type !== 'LORA') fail('peft_type', `'${String(raw.peft_type)}' is not supported (only LORA)`);
  if (raw.use_rslora === true) fail('use_rslora', 'rank-stabilised LoRA is not supported');
  if (raw.use_dora === true) fail('use_dora', 'DoRA is not supported');
  if (raw.bias !== undefined && raw.bias !== 'none') fail('bias', `'${String(raw.bias)}' is not supported (only none)`);
  if (raw.fan_in_fan_out === true) fail('fan_in_fan_out', 'not supported');
  for (const k of ['rank_pattern', 'alpha_pattern'] as const) {
    const v = raw[k];
    if (v && typeof v === 'object' && Object.keys(v).length) fail(k, 'per-module ranks / alphas are not supported');
  }
  if (raw.layers_to_transform != null) fail('layers_to_transform', 'not supported (every layer is adapted)');
  if (raw.modules_to_save != null) fail('modules_to_save', 'not supported');
  const targets = raw.target_modules;
  const list = Array.isArray(targets)
    ? targets
    : typeof targets === 'string'
      ? [targets]
      : fail('target_modules', 'must be a list of module names');
  const bad = (list as unknown[]).filter((t) => !LORA_TARGETS.includes(t as LoraTarget));
  if (bad.length) fail('target_modules', `${bad.join(', ')} not supported (known: ${LORA_TARGETS.join(', ')})`);
  const r = raw.r;
  if (typeof r !== 'number' || !Number.isInteger(r) || r <= 0) fail('r', 'must be a positive integer');
  const alpha = raw.lora_alpha ?? r;
  // JSON's 1e309 parses to Infinity: a scale that makes every adapted output non-finite.
  if (typeof alpha !== 'number' || !(alpha > 0) || !Number.isFinite(alpha))
    fail(
      'lora_alpha',
      typeof alpha === 'number' && !Number.isFinite(alpha)
        ? `must be a positive finite number, got ${alpha} (a number of 1e309 or more reads as Infinity)`
        : `must be a positive finite number, got ${JSON.stringify(alpha)}`,
    );
  const dropout = raw.lora_dropout ?? 0;
  if (typeof dropout !== 'number' || dropout < 0 || dropout >= 1) fail('lora_dropout', 'must be in [0, 1)');
  return {
    rank: r as number,
    alpha: alpha as number,
    dropout: dropout as number,
    target_modules: [...new Set(list as LoraTarget[])],
  };
}

/**
 * A run's model with `model.lora` applied: adapters added (seeded), or kept when the checkpoint
 * already has them with the same settings (a LoRA run's own checkpoint); different ones are refused.
 */
export function withLora(model: Transformer, lora: LoraConfigInput | undefined, seed = 0): Transformer {
  if (!lora) return model;
  const c = makeLoraConfig(lora);
  if (!model.lora) return model.addLora(c, seed);
  const same =
    model.lora.rank === c.rank &&
    model.lora.alpha === c.alpha &&
    [...model.lora.target_modules].sort().join() === [...c.target_modules].sort().join();
  if (!same)
    throw new InputError(
      `the checkpoint already has LoRA adapters (rank ${model.lora.rank}, alpha ${model.lora.alpha}, ${model.lora.target_modules.join(' ')}) that differ from model.lora`,
      { field: 'model.lora' },
    );
  model.lora = { ...model.lora, dropout: c.dropout };
  return model;
}
