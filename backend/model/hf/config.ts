// config.json of a Hugging Face causal LM (and of this project's own checkpoints, which use the same
// layout) -> ModelConfig. Only the four architectures whose math transformer.ts implements are read;
// every field is known: harmless ones are ignored, math-changing ones must have the value the
// implementation assumes, and an unknown field is refused by name (it might change the math).
import { ZodError } from 'zod';
import { InputError } from '../../core/errors.js';
import { makeConfig, type ModelConfig } from '../config.js';

/** The shortest max_position_embeddings a model may have: a prompt and a token of response (tests use 12). */
export const MIN_CONTEXT = 8;

export const HF_ARCHITECTURES = {
  LlamaForCausalLM: 'llama',
  MistralForCausalLM: 'mistral',
  Qwen2ForCausalLM: 'qwen2',
  Qwen3ForCausalLM: 'qwen3',
} as const;
export type HfArchitecture = keyof typeof HF_ARCHITECTURES;

/** Longest context the rotary tables are built for; longer models are read with this limit (math unchanged below it). */
export const MAX_SEQ_CAP = 32768;

/** Fields that do not change the forward pass (ids, bookkeeping, training-time settings we do not use). */
const HARMLESS = new Set([
  '_name_or_path',
  'architectures',
  'model_type',
  'torch_dtype',
  'dtype',
  'transformers_version',
  'bos_token_id',
  'eos_token_id',
  'pad_token_id',
  'use_cache',
  'initializer_range',
  'tokenizer_class',
  'pretraining_tp',
  'max_window_layers',
  'rft',
  'output_attentions',
  'output_hidden_states',
  'return_dict',
  'is_encoder_decoder',
  'unsloth_version',
  'keys_to_ignore_at_inference',
]);

export interface HfModelInfo {
  architecture: HfArchitecture;
  config: ModelConfig;
  /** The file's dtype label (torch_dtype / dtype), for display. */
  dtype?: string;
}

type Json = Record<string, unknown>;

/** config.json's fields as parseHfConfig reads them: every error names the file and the field. */
interface Fields {
  r: Json;
  fail: (field: string, message: string) => never;
  num: (k: string, required: boolean) => number | undefined;
}

function fields(r: Json, file: string): Fields {
  const fail = (field: string, message: string): never => {
    throw new InputError(message, { file, field });
  };
  const num = (k: string, required: boolean): number | undefined => {
    const v = r[k];
    if (v === undefined || v === null) return required ? fail(k, 'missing (a number is required)') : undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) return fail(k, `expected a number, got ${JSON.stringify(v)}`);
    return v;
  };
  return { r, fail, num };
}

export function parseHfConfig(raw: unknown, file: string): HfModelInfo {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw))
    throw new InputError('expected a JSON object', { file, field: '(root)' });
  const f = fields(raw as Json, file);
  const { r, fail, num } = f;
  const architecture = readArchitecture(f);
  checkFieldNames(f);
  const { ropeTheta, ropeScaling } = readRope(f, architecture);
  const maxSeqLen = readMaxSeqLen(f, architecture);
  const nHeads = num('num_attention_heads', true)!;
  checkHeads(f, nHeads);
  const rft = (r.rft ?? {}) as { valueHead?: boolean; vision?: ModelConfig['vision'] | null; initStd?: number };
  try {
    const config = makeConfig({
      vocabSize: num('vocab_size', true)!,
      dModel: num('hidden_size', true)!,
      nLayers: num('num_hidden_layers', true)!,
      nHeads,
      nKvHeads: num('num_key_value_heads', false) ?? nHeads,
      dFF: num('intermediate_size', true)!,
      maxSeqLen,
      ropeTheta: ropeTheta ?? 10000,
      rmsEps: num('rms_norm_eps', false) ?? 1e-6,
      // transformers' default for these four architectures is untied, except where the file says so.
      tieEmbeddings: r.tie_word_embeddings === undefined ? false : (r.tie_word_embeddings as boolean),
      headDim: num('head_dim', false),
      attnBias: architecture === 'Qwen2ForCausalLM',
      qkNorm: architecture === 'Qwen3ForCausalLM',
      ropeScaling,
      valueHead: rft.valueHead ?? false,
      vision: rft.vision ?? undefined,
      initStd: rft.initStd ?? 0.02,
      hfConfig: Object.fromEntries(Object.entries(r).filter(([k]) => k !== 'rft')),
    });
    const dtype = typeof r.torch_dtype === 'string' ? r.torch_dtype : typeof r.dtype === 'string' ? r.dtype : undefined;
    return { architecture, config, dtype };
  } catch (e) {
    if (e instanceof InputError) throw e;
    // The schema's names are internal (nLayers): say which config.json key holds the bad value, in one line.
    if (e instanceof ZodError) {
      const i = e.issues[0]!;
      const key = i.path.length ? (CONFIG_KEY_OF[String(i.path[0])] ?? i.path.join('.')) : '(root)';
      const got = i.path.length === 1 && CONFIG_KEY_OF[String(i.path[0])] ? ` got ${JSON.stringify(r[key])}:` : '';
      return fail(key, `${got} ${i.message.toLowerCase()}`.trim());
    }
    throw new InputError(`invalid model config: ${(e as Error).message}`, { file });
  }
}

/** `architectures` (exactly one, supported) and `model_type` (matching it). */
function readArchitecture({ r, fail }: Fields): HfArchitecture {
  const archs = r.architectures;
  if (!Array.isArray(archs) || archs.length !== 1 || typeof archs[0] !== 'string')
    return fail('architectures', `expected one architecture, got ${JSON.stringify(archs)}`);
  const arch = archs[0] as string;
  if (!(arch in HF_ARCHITECTURES))
    fail(
      'architectures',
      `architecture '${arch}' is not supported (supported: ${Object.keys(HF_ARCHITECTURES).join(', ')})`,
    );
  const architecture = arch as HfArchitecture;
  const modelType = HF_ARCHITECTURES[architecture];
  if (r.model_type !== undefined && r.model_type !== modelType)
    fail('model_type', `expected '${modelType}' for ${architecture}, got ${JSON.stringify(r.model_type)}`);
  return architecture;
}

/** Every field is known: math-changing ones must have the value the implementation assumes, unknown ones are refused. */
function checkFieldNames({ r, fail }: Fields): void {
  const mustBe = (k: string, ok: (v: unknown) => boolean, want: string) => {
    if (r[k] !== undefined && !ok(r[k]))
      fail(k, `${JSON.stringify(r[k])} changes the model's math and is not supported (expected ${want})`);
  };
  const used = new Set<string>();
  const use = (...ks: string[]) => ks.forEach((k) => used.add(k));

  use(
    'vocab_size',
    'hidden_size',
    'intermediate_size',
    'num_hidden_layers',
    'num_attention_heads',
    'num_key_value_heads',
    'head_dim',
  );
  use(
    'max_position_embeddings',
    'rms_norm_eps',
    'rope_theta',
    'tie_word_embeddings',
    'hidden_act',
    'attention_dropout',
    'attention_bias',
  );
  use('mlp_bias', 'use_sliding_window', 'sliding_window', 'rope_scaling', 'rope_parameters', 'layer_types');
  mustBe('hidden_act', (v) => v === 'silu', "'silu'");
  mustBe('attention_dropout', (v) => v === 0 || v === 0.0, '0');
  mustBe('attention_bias', (v) => v === false, 'false');
  mustBe('mlp_bias', (v) => v === false, 'false');
  mustBe('use_sliding_window', (v) => v === false, 'false');
  mustBe(
    'layer_types',
    (v) => Array.isArray(v) && v.every((x) => x === 'full_attention'),
    "only 'full_attention' layers",
  );
  if (r.tie_word_embeddings !== undefined && typeof r.tie_word_embeddings !== 'boolean')
    fail('tie_word_embeddings', 'expected true or false');
  for (const k of Object.keys(r))
    if (!used.has(k) && !HARMLESS.has(k))
      fail(
        k,
        `unknown config field: it may change the model's math, so it is refused (known fields: see backend/model/hf/config.ts)`,
      );
}

/** Rotary: rope_theta at the top level (transformers 4) or inside rope_parameters (transformers 5); only llama3 scaling. */
function readRope(
  { r, fail, num }: Fields,
  architecture: HfArchitecture,
): { ropeTheta?: number; ropeScaling: ModelConfig['ropeScaling'] } {
  let ropeTheta = num('rope_theta', false);
  let scalingRaw: unknown = r.rope_scaling;
  let scalingField = 'rope_scaling';
  if (r.rope_parameters !== undefined && r.rope_parameters !== null) {
    const rp = r.rope_parameters as Json;
    if (typeof rp !== 'object') fail('rope_parameters', 'expected an object');
    if (typeof rp.rope_theta === 'number') ropeTheta = rp.rope_theta;
    scalingRaw = rp;
    scalingField = 'rope_parameters';
  }
  let ropeScaling: ModelConfig['ropeScaling'];
  if (scalingRaw !== undefined && scalingRaw !== null) {
    const s = scalingRaw as Json;
    const type = s.rope_type ?? s.type;
    if (type === 'llama3') {
      if (architecture !== 'LlamaForCausalLM')
        fail(`${scalingField}.rope_type`, `'llama3' scaling is only read for LlamaForCausalLM`);
      const f = (k: string): number =>
        typeof s[k] === 'number' ? (s[k] as number) : fail(`${scalingField}.${k}`, 'missing (a number is required)');
      ropeScaling = {
        type: 'llama3',
        factor: f('factor'),
        lowFreqFactor: f('low_freq_factor'),
        highFreqFactor: f('high_freq_factor'),
        originalMaxPositionEmbeddings: f('original_max_position_embeddings'),
      };
      for (const k of Object.keys(s))
        if (
          ![
            'rope_type',
            'type',
            'factor',
            'low_freq_factor',
            'high_freq_factor',
            'original_max_position_embeddings',
            'rope_theta',
          ].includes(k)
        )
          fail(`${scalingField}.${k}`, 'unknown field of llama3 rope scaling');
    } else if (type !== 'default' || scalingField === 'rope_scaling') {
      fail(
        `${scalingField}.rope_type`,
        `rotary scaling ${JSON.stringify(type)} changes the model's math and is not supported (only 'llama3')`,
      );
    }
  }
  return { ropeTheta, ropeScaling };
}

/** The context read: max_position_embeddings, capped at MAX_SEQ_CAP (and Mistral's sliding window). */
function readMaxSeqLen({ r, fail, num }: Fields, architecture: HfArchitecture): number {
  const maxPos = num('max_position_embeddings', true)!;
  // A context shorter than a chat prompt failed later in generate() as an unnamed error.
  if (!Number.isInteger(maxPos) || maxPos < MIN_CONTEXT)
    fail(
      'max_position_embeddings',
      `${maxPos} is too short a context: at least ${MIN_CONTEXT} positions are needed for a prompt and its response`,
    );
  let maxSeqLen = Math.min(maxPos, MAX_SEQ_CAP);
  // Mistral's sliding window only differs from full attention beyond the window: stay within it.
  if (architecture === 'MistralForCausalLM' && r.sliding_window !== undefined && r.sliding_window !== null)
    maxSeqLen = Math.min(maxSeqLen, num('sliding_window', true)!);
  return maxSeqLen;
}

/** makeConfig's own shape checks speak of dModel / nHeads: say them first in config.json's keys. */
function checkHeads({ r, fail }: Fields, nHeads: number): void {
  const hidden = r.hidden_size;
  const kv = r.num_key_value_heads;
  if (
    typeof hidden === 'number' &&
    Number.isInteger(nHeads) &&
    nHeads > 0 &&
    r.head_dim === undefined &&
    hidden % nHeads !== 0
  )
    fail(
      'num_attention_heads',
      `hidden_size ${hidden} is not divisible by num_attention_heads ${nHeads} (give head_dim if the heads are not hidden_size / num_attention_heads)`,
    );
  if (typeof kv === 'number' && Number.isInteger(kv) && kv > 0 && Number.isInteger(nHeads) && nHeads % kv !== 0)
    fail('num_key_value_heads', `num_attention_heads ${nHeads} is not divisible by num_key_value_heads ${kv}`);
}

/** ModelConfig's field -> the config.json key it is read from (errors name the file's key). */
const CONFIG_KEY_OF: Record<string, string> = {
  vocabSize: 'vocab_size',
  dModel: 'hidden_size',
  nLayers: 'num_hidden_layers',
  nHeads: 'num_attention_heads',
  nKvHeads: 'num_key_value_heads',
  dFF: 'intermediate_size',
  maxSeqLen: 'max_position_embeddings',
  ropeTheta: 'rope_theta',
  rmsEps: 'rms_norm_eps',
  headDim: 'head_dim',
};

/** The architecture a ModelConfig is written as (the math decides: biases -> Qwen2, q/k norms -> Qwen3). */
export function architectureOf(c: ModelConfig): HfArchitecture {
  if (c.attnBias && c.qkNorm) throw new Error('no supported architecture has both q/k/v biases and q/k norms');
  if (c.attnBias) return 'Qwen2ForCausalLM';
  if (c.qkNorm) return 'Qwen3ForCausalLM';
  return 'LlamaForCausalLM';
}

/**
 * config.json for a model: the imported model's own config (`base`, its architecture and other
 * fields kept) with the shape fields written from `c`; or a fresh one in the architecture the math needs.
 */
export function writeHfConfig(c: ModelConfig, base?: Json, ids?: { bos?: number; eos?: number; pad?: number }): Json {
  const arch =
    base && Array.isArray(base.architectures) ? (base.architectures[0] as HfArchitecture) : architectureOf(c);
  const out: Json = {
    ...(base ?? {}),
    architectures: [arch],
    model_type: HF_ARCHITECTURES[arch] ?? 'llama',
    hidden_size: c.dModel,
    intermediate_size: c.dFF,
    num_attention_heads: c.nHeads,
    num_hidden_layers: c.nLayers,
    num_key_value_heads: c.nKvHeads,
    vocab_size: c.vocabSize,
    // A capped context (MAX_SEQ_CAP) keeps the file's own value.
    max_position_embeddings:
      base && typeof base.max_position_embeddings === 'number' && base.max_position_embeddings > c.maxSeqLen
        ? base.max_position_embeddings
        : c.maxSeqLen,
    rms_norm_eps: c.rmsEps,
    rope_theta: c.ropeTheta,
    tie_word_embeddings: c.tieEmbeddings,
    hidden_act: 'silu',
    torch_dtype: 'float32',
  };
  delete out.dtype;
  if (c.headDim !== undefined) out.head_dim = c.headDim;
  if (c.ropeScaling && !base) {
    const s = c.ropeScaling;
    out.rope_scaling = {
      rope_type: 'llama3',
      factor: s.factor,
      low_freq_factor: s.lowFreqFactor,
      high_freq_factor: s.highFreqFactor,
      original_max_position_embeddings: s.originalMaxPositionEmbeddings,
    };
  }
  if (!base) {
    if (ids?.bos !== undefined) out.bos_token_id = ids.bos;
    if (ids?.eos !== undefined) out.eos_token_id = ids.eos;
    if (ids?.pad !== undefined) out.pad_token_id = ids.pad;
  }
  return out;
}
