// A model as a GGUF file llama.cpp loads (F32, or F16 for the 2-D weights), following
// convert_hf_to_gguf.py: Llama and Mistral -> arch "llama" with q/k rows permuted from HF's
// rotate-half RoPE layout to llama.cpp's interleaved pairs (and Llama-3's rope scaling as a
// rope_freqs tensor); Qwen2 / Qwen3 -> "qwen2" / "qwen3" (NEOX rotary, no permutation), with
// q/k/v biases and q/k norms. The tokenizer goes in as a byte-level BPE ("gpt2") vocabulary.
import { InputError } from '../../core/errors.js';
import { headDim, type ModelConfig } from '../config.js';
import { hfTensors } from '../checkpoint.js';
import { architectureOf, type HfArchitecture } from '../hf/config.js';
import { ropeFrequencies } from '../layers.js';
import type { Tokenizer } from '../tokenizer/types.js';
import type { Transformer } from '../transformer.js';
import { join } from 'node:path';
import { GGML_F16, GGML_F32, writeGguf, type GgufTensor, type GgufValue } from './gguf-file.js';
import { writeExport, type TargetOptions } from './target.js';

const GGUF_ARCH: Record<HfArchitecture, string> = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'llama',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
};

export function ggufArchitecture(c: ModelConfig): { hf: HfArchitecture; gguf: string } {
  const a =
    c.hfConfig && Array.isArray(c.hfConfig.architectures)
      ? (c.hfConfig.architectures[0] as HfArchitecture)
      : architectureOf(c);
  return { hf: a, gguf: GGUF_ARCH[a] ?? 'llama' };
}

/**
 * HF rotate-half rows -> interleaved rows, per head (convert_hf_to_gguf.py's LlamaModel.permute):
 * within a head, new row 2j + s takes old row s * hd/2 + j.
 */
export function permuteRows(data: Float32Array, rows: number, cols: number, nHead: number): Float32Array {
  const hd = rows / nHead;
  const half = hd / 2;
  const out = new Float32Array(data.length);
  for (let h = 0; h < nHead; h++)
    for (let s = 0; s < 2; s++)
      for (let j = 0; j < half; j++) {
        const src = (h * hd + s * half + j) * cols;
        const dst = (h * hd + 2 * j + s) * cols;
        out.set(data.subarray(src, src + cols), dst);
      }
  return out;
}

/** llama.cpp's rope_freqs: per frequency, the divisor Llama-3 scaling applies (1 where unchanged). */
function ropeFreqFactors(c: ModelConfig): number[] {
  const hd = headDim(c);
  const base = ropeFrequencies(hd, c.ropeTheta);
  const scaled = ropeFrequencies(hd, c.ropeTheta, c.ropeScaling);
  return [...base].map((f, i) => f / scaled[i]!);
}

/** The vocabulary as GGUF tokenizer keys (byte-level BPE only: what llama.cpp calls "gpt2"). */
function tokenizerKv(tok: Tokenizer, vocabSize: number, arch: string): [string, GgufValue][] {
  const json = tok.toJSON() as {
    model?: { type?: string; vocab?: Record<string, number>; merges?: (string | string[])[] };
    pre_tokenizer?: unknown;
    added_tokens?: { id: number; content: string; special?: boolean }[];
  };
  const model = json.model;
  const preJson = JSON.stringify(json.pre_tokenizer ?? null);
  if (!model || model.type !== 'BPE' || !preJson.includes('ByteLevel'))
    throw new InputError(
      `only byte-level BPE tokenizers can be written to GGUF (this one is ${model?.type ?? 'unknown'}${preJson.includes('ByteLevel') ? '' : ' without a ByteLevel pre-tokenizer'})`,
      { field: 'tokenizer.json' },
    );
  const tokens: string[] = new Array(vocabSize);
  const types: number[] = new Array(vocabSize).fill(1);
  for (const [t, id] of Object.entries(model.vocab ?? {})) if (id < vocabSize) tokens[id] = t;
  for (const a of json.added_tokens ?? []) {
    if (a.id >= vocabSize) continue;
    tokens[a.id] = a.content;
    types[a.id] = a.special ? 3 : 4; // control : user-defined
  }
  for (let i = 0; i < vocabSize; i++) {
    if (tokens[i] === undefined) {
      tokens[i] = `[PAD${i}]`;
      types[i] = 5; // unused
    }
  }
  const merges = (model.merges ?? []).map((m) => (Array.isArray(m) ? m.join(' ') : m));
  // The pre-tokenizer regex decides llama.cpp's pre-tokenizer type.
  const pre = preJson.includes('\\\\p{N}{1,3}')
    ? 'llama-bpe'
    : arch.startsWith('qwen') && preJson.includes('Split')
      ? 'qwen2'
      : preJson.includes('Split')
        ? 'default'
        : 'gpt-2';
  const kv: [string, GgufValue][] = [
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: pre }],
    ['tokenizer.ggml.tokens', { type: 'strings', value: tokens }],
    ['tokenizer.ggml.token_type', { type: 'i32s', value: types }],
    ['tokenizer.ggml.merges', { type: 'strings', value: merges }],
    ['tokenizer.ggml.bos_token_id', { type: 'u32', value: tok.bosId }],
    ['tokenizer.ggml.eos_token_id', { type: 'u32', value: tok.eosId }],
    ['tokenizer.ggml.padding_token_id', { type: 'u32', value: tok.padId }],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: false }],
  ];
  const template = (tok as { chatTemplate?: string }).chatTemplate;
  if (template) kv.push(['tokenizer.chat_template', { type: 'string', value: template }]);
  return kv;
}

export interface GgufExportOptions {
  /** F16 stores the 2-D weights in half precision (norms, biases and rope factors stay F32, as llama.cpp expects). */
  dtype: 'f32' | 'f16';
  name?: string;
}

export async function exportGguf(
  model: Transformer,
  tok: Tokenizer,
  file: string,
  opts: GgufExportOptions,
): Promise<void> {
  const c = model.config;
  if (c.valueHead || c.vision)
    throw new InputError('a model with a value head or vision input has no GGUF form', { field: 'model' });
  const { gguf: arch } = ggufArchitecture(c);
  const hd = headDim(c);
  const permute = arch === 'llama';
  const hf = await hfTensors(model);
  const tensors: GgufTensor[] = [];
  const put = (name: string, hfName: string, transform?: (d: Float32Array, shape: number[]) => Float32Array) => {
    const t = hf.get(hfName);
    if (!t) throw new Error(`gguf export: model has no ${hfName}`);
    const data = transform ? transform(t.data, t.shape) : t.data;
    tensors.push({
      name,
      shape: t.shape,
      data,
      ggmlType: opts.dtype === 'f16' && t.shape.length === 2 ? GGML_F16 : GGML_F32,
    });
  };
  const perm = (nHead: number) => (d: Float32Array, shape: number[]) =>
    permute ? permuteRows(d, shape[0]!, shape[1] ?? 1, nHead) : d;
  put('token_embd.weight', 'model.embed_tokens.weight');
  for (let i = 0; i < c.nLayers; i++) {
    const p = `model.layers.${i}`;
    const b = `blk.${i}`;
    put(`${b}.attn_norm.weight`, `${p}.input_layernorm.weight`);
    put(`${b}.attn_q.weight`, `${p}.self_attn.q_proj.weight`, perm(c.nHeads));
    put(`${b}.attn_k.weight`, `${p}.self_attn.k_proj.weight`, perm(c.nKvHeads));
    put(`${b}.attn_v.weight`, `${p}.self_attn.v_proj.weight`);
    put(`${b}.attn_output.weight`, `${p}.self_attn.o_proj.weight`);
    if (c.attnBias) {
      put(`${b}.attn_q.bias`, `${p}.self_attn.q_proj.bias`, perm(c.nHeads));
      put(`${b}.attn_k.bias`, `${p}.self_attn.k_proj.bias`, perm(c.nKvHeads));
      put(`${b}.attn_v.bias`, `${p}.self_attn.v_proj.bias`);
    }
    if (c.qkNorm) {
      put(`${b}.attn_q_norm.weight`, `${p}.self_attn.q_norm.weight`);
      put(`${b}.attn_k_norm.weight`, `${p}.self_attn.k_norm.weight`);
    }
    put(`${b}.ffn_norm.weight`, `${p}.post_attention_layernorm.weight`);
    put(`${b}.ffn_gate.weight`, `${p}.mlp.gate_proj.weight`);
    put(`${b}.ffn_up.weight`, `${p}.mlp.up_proj.weight`);
    put(`${b}.ffn_down.weight`, `${p}.mlp.down_proj.weight`);
  }
  put('output_norm.weight', 'model.norm.weight');
  if (!c.tieEmbeddings) put('output.weight', 'lm_head.weight');
  if (c.ropeScaling)
    tensors.push({
      name: 'rope_freqs.weight',
      shape: [hd / 2],
      data: new Float32Array(ropeFreqFactors(c)),
      ggmlType: GGML_F32,
    });

  const maxPos =
    typeof c.hfConfig?.max_position_embeddings === 'number'
      ? (c.hfConfig.max_position_embeddings as number)
      : c.maxSeqLen;
  const kv: [string, GgufValue][] = [
    ['general.architecture', { type: 'string', value: arch }],
    ['general.name', { type: 'string', value: opts.name ?? 'rft-export' }],
    ['general.file_type', { type: 'u32', value: opts.dtype === 'f16' ? 1 : 0 }],
    [`${arch}.context_length`, { type: 'u32', value: maxPos }],
    [`${arch}.embedding_length`, { type: 'u32', value: c.dModel }],
    [`${arch}.block_count`, { type: 'u32', value: c.nLayers }],
    [`${arch}.feed_forward_length`, { type: 'u32', value: c.dFF }],
    [`${arch}.attention.head_count`, { type: 'u32', value: c.nHeads }],
    [`${arch}.attention.head_count_kv`, { type: 'u32', value: c.nKvHeads }],
    [`${arch}.attention.key_length`, { type: 'u32', value: hd }],
    [`${arch}.attention.value_length`, { type: 'u32', value: hd }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { type: 'f32', value: c.rmsEps }],
    [`${arch}.rope.freq_base`, { type: 'f32', value: c.ropeTheta }],
    [`${arch}.rope.dimension_count`, { type: 'u32', value: hd }],
    [`${arch}.vocab_size`, { type: 'u32', value: c.vocabSize }],
    ...tokenizerKv(tok, c.vocabSize, arch),
  ];
  writeGguf(file, kv, tensors);
}

/** `rft model export --format gguf`: OUT/model.gguf, put in place by target.ts like the other formats. Returns the file. */
export async function exportGgufFolder(
  model: Transformer,
  tok: Tokenizer,
  out: string,
  opts: GgufExportOptions,
  target: Omit<TargetOptions, 'format'>,
): Promise<string> {
  await writeExport(out, { ...target, format: 'gguf' }, (dir) => exportGguf(model, tok, join(dir, 'model.gguf'), opts));
  return join(out, 'model.gguf');
}
