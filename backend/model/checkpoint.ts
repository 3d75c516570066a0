// Checkpoints in Hugging Face's Llama layout: model.safetensors + config.json + tokenizer.json,
// plus rft.json (version, step, the project's own config). Written to a temp folder and renamed,
// so a process killed mid-save never leaves a half-written checkpoint behind.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tf } from './engine.js';
import { makeConfig, type ModelConfig } from './config.js';
import { Transformer } from './transformer.js';
import { readSafetensors, writeSafetensors } from './safetensors.js';
import { InputError } from '../core/errors.js';
import type { Tokenizer } from './tokenizer/types.js';
import { loadTokenizer, saveTokenizer } from './tokenizer/io.js';

export interface CheckpointMeta {
  version: number;
  step?: number;
  createdAt?: number;
  [k: string]: unknown;
}

/** Names stored as [out, in] in Hugging Face files but [in, out] in memory. */
function isLinearWeight(name: string): boolean {
  return /(_proj|lm_head|value_head|patch_embed)\.weight$/.test(name);
}

export function hfConfig(c: ModelConfig, tok?: Tokenizer): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: c.dModel,
    intermediate_size: c.dFF,
    num_attention_heads: c.nHeads,
    num_hidden_layers: c.nLayers,
    num_key_value_heads: c.nKvHeads,
    vocab_size: c.vocabSize,
    max_position_embeddings: c.maxSeqLen,
    rms_norm_eps: c.rmsEps,
    rope_theta: c.ropeTheta,
    tie_word_embeddings: c.tieEmbeddings,
    hidden_act: 'silu',
    torch_dtype: 'float32',
    ...(tok ? { bos_token_id: tok.bosId, eos_token_id: tok.eosId, pad_token_id: tok.padId } : {}),
    rft: { valueHead: c.valueHead, vision: c.vision ?? null, initStd: c.initStd },
  };
}

function configFromHf(raw: Record<string, unknown>, file: string): ModelConfig {
  const need = (k: string): number => {
    const v = raw[k];
    if (typeof v !== 'number') throw new InputError(`missing or not a number`, { file, field: k });
    return v;
  };
  const rft = (raw.rft ?? {}) as { valueHead?: boolean; vision?: ModelConfig['vision'] | null; initStd?: number };
  try {
    return makeConfig({
      vocabSize: need('vocab_size'),
      dModel: need('hidden_size'),
      nLayers: need('num_hidden_layers'),
      nHeads: need('num_attention_heads'),
      nKvHeads: typeof raw.num_key_value_heads === 'number' ? raw.num_key_value_heads : need('num_attention_heads'),
      dFF: need('intermediate_size'),
      maxSeqLen: need('max_position_embeddings'),
      ropeTheta: typeof raw.rope_theta === 'number' ? raw.rope_theta : 10000,
      rmsEps: typeof raw.rms_norm_eps === 'number' ? raw.rms_norm_eps : 1e-5,
      tieEmbeddings: raw.tie_word_embeddings !== false,
      valueHead: rft.valueHead ?? false,
      vision: rft.vision ?? undefined,
      initStd: rft.initStd ?? 0.02,
    });
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(`invalid model config: ${(e as Error).message}`, { file });
  }
}

export async function saveCheckpoint(model: Transformer, dir: string, meta: CheckpointMeta, tokenizer?: Tokenizer): Promise<string> {
  const tmp = `${dir}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  for (const [name, v] of model.params) {
    const t = isLinearWeight(name) ? tf.transpose(v) : v;
    tensors.set(name, { shape: t.shape, data: (await t.data()) as Float32Array });
    if (t !== v) t.dispose();
  }
  writeFileSync(join(tmp, 'model.safetensors'), writeSafetensors(tensors, { format: 'pt', rft_version: String(meta.version) }));
  writeFileSync(join(tmp, 'config.json'), JSON.stringify(hfConfig(model.config, tokenizer), null, 2));
  if (tokenizer) saveTokenizer(tokenizer, tmp);
  writeFileSync(join(tmp, 'rft.json'), JSON.stringify({ ...meta, createdAt: meta.createdAt ?? Date.now() }, null, 2));
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

export interface LoadedCheckpoint {
  model: Transformer;
  /** The checkpoint's tokenizer.json, when it has one. */
  tokenizer?: Tokenizer;
  meta: CheckpointMeta;
  dir: string;
}

/** Load a checkpoint folder; every problem names the file and the tensor or field. */
export function loadCheckpoint(dir: string): LoadedCheckpoint {
  const cfgFile = join(dir, 'config.json');
  const wFile = join(dir, 'model.safetensors');
  if (!existsSync(cfgFile)) throw new InputError('checkpoint has no config.json', { file: cfgFile });
  if (!existsSync(wFile)) throw new InputError('checkpoint has no model.safetensors', { file: wFile });
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(readFileSync(cfgFile, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new InputError(`not valid JSON (${(e as Error).message})`, { file: cfgFile });
  }
  const config = configFromHf(raw, cfgFile);
  const { tensors } = readSafetensors(readFileSync(wFile), wFile);
  const model = new Transformer(config, 0);
  try {
    for (const [name, v] of model.params) {
      const t = tensors.get(name);
      if (!t) throw new InputError(`tensor missing (the config expects it)`, { file: wFile, field: name });
      const want = isLinearWeight(name) ? [...v.shape].reverse() : v.shape;
      if (t.shape.length !== want.length || t.shape.some((d, i) => d !== want[i]))
        throw new InputError(`shape [${t.shape}] does not match the config's [${want}]`, { file: wFile, field: name });
      for (let i = 0; i < t.data.length; i++) {
        if (!Number.isFinite(t.data[i]!)) throw new InputError(`value ${t.data[i]} at index ${i} is not finite`, { file: wFile, field: name });
      }
      tf.tidy(() => {
        const x = tf.tensor(t.data, t.shape);
        v.assign(isLinearWeight(name) ? tf.transpose(x) : x);
      });
    }
    const extra = [...tensors.keys()].filter((n) => !model.params.has(n) && !(n === 'lm_head.weight' && config.tieEmbeddings));
    if (extra.length) throw new InputError(`tensors not in the config's model: ${extra.slice(0, 5).join(', ')}${extra.length > 5 ? ', ...' : ''}`, { file: wFile });
  } catch (e) {
    model.dispose();
    throw e;
  }
  let meta: CheckpointMeta = { version: 0 };
  const metaFile = join(dir, 'rft.json');
  if (existsSync(metaFile)) {
    try {
      meta = JSON.parse(readFileSync(metaFile, 'utf8')) as CheckpointMeta;
    } catch (e) {
      throw new InputError(`not valid JSON (${(e as Error).message})`, { file: metaFile });
    }
  }
  const tokenizer = existsSync(join(dir, 'tokenizer.json')) ? loadTokenizer(dir) : undefined;
  if (tokenizer && tokenizer.vocabSize > config.vocabSize) {
    model.dispose();
    throw new InputError(`tokenizer has ${tokenizer.vocabSize} tokens but the model's vocab_size is ${config.vocabSize}`, { file: join(dir, 'tokenizer.json') });
  }
  return { model, meta, dir, tokenizer };
}
