// The parameters of a model of a config (HF names, in-memory shapes, initialisation), in creation
// order: the Transformer creates them from this list and checkpoint loading checks files against it.
import { headDim, type ModelConfig } from './config.js';

/** One parameter: HF name, in-memory shape ([in, out] for linear weights), initialisation (a std or a constant). */
export interface ParameterSpec {
  name: string;
  shape: number[];
  init: number | 'ones' | 'zeros';
}

/**
 * Every parameter of a model with this config, in creation order (the order fixes the seeded init).
 * Checkpoint loading checks files against this list before allocating anything.
 */
export function parameterSpecs(c: ModelConfig): ParameterSpec[] {
  const hd = headDim(c);
  const out: ParameterSpec[] = [];
  const add = (name: string, shape: number[], init: ParameterSpec['init']) => out.push({ name, shape, init });
  // GPT-2 style init: residual projections scaled down by depth so deep stacks start stable.
  const std = c.initStd;
  const resStd = std / Math.sqrt(2 * c.nLayers);
  add('model.embed_tokens.weight', [c.vocabSize, c.dModel], std);
  for (let i = 0; i < c.nLayers; i++) {
    const p = `model.layers.${i}`;
    add(`${p}.input_layernorm.weight`, [c.dModel], 'ones');
    add(`${p}.self_attn.q_proj.weight`, [c.dModel, c.nHeads * hd], std);
    add(`${p}.self_attn.k_proj.weight`, [c.dModel, c.nKvHeads * hd], std);
    add(`${p}.self_attn.v_proj.weight`, [c.dModel, c.nKvHeads * hd], std);
    add(`${p}.self_attn.o_proj.weight`, [c.nHeads * hd, c.dModel], resStd);
    if (c.attnBias) {
      add(`${p}.self_attn.q_proj.bias`, [c.nHeads * hd], 'zeros');
      add(`${p}.self_attn.k_proj.bias`, [c.nKvHeads * hd], 'zeros');
      add(`${p}.self_attn.v_proj.bias`, [c.nKvHeads * hd], 'zeros');
    }
    if (c.qkNorm) {
      add(`${p}.self_attn.q_norm.weight`, [hd], 'ones');
      add(`${p}.self_attn.k_norm.weight`, [hd], 'ones');
    }
    add(`${p}.post_attention_layernorm.weight`, [c.dModel], 'ones');
    add(`${p}.mlp.gate_proj.weight`, [c.dModel, c.dFF], std);
    add(`${p}.mlp.up_proj.weight`, [c.dModel, c.dFF], std);
    add(`${p}.mlp.down_proj.weight`, [c.dFF, c.dModel], resStd);
  }
  add('model.norm.weight', [c.dModel], 'ones');
  if (!c.tieEmbeddings) add('lm_head.weight', [c.dModel, c.vocabSize], std);
  if (c.valueHead) {
    add('value_head.weight', [c.dModel, 1], std);
    add('value_head.bias', [1], 'zeros');
  }
  if (c.vision) {
    const pd = c.vision.patchSize * c.vision.patchSize * c.vision.channels;
    add('vision.patch_embed.weight', [pd, c.dModel], std);
    add('vision.patch_embed.bias', [c.dModel], 'zeros');
    add('vision.pos_embed', [c.vision.maxPatches, c.dModel], std);
  }
  return out;
}
