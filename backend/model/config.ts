// Model shape: a decoder-only transformer of the Llama family (RMSNorm, RoPE, SwiGLU, GQA).
import { z } from 'zod';

export const ModelConfigSchema = z.object({
  vocabSize: z.number().int().positive(),
  dModel: z.number().int().positive(),
  nLayers: z.number().int().positive(),
  nHeads: z.number().int().positive(),
  /** Grouped-query attention: number of key/value heads (divides nHeads). */
  nKvHeads: z.number().int().positive(),
  /** SwiGLU hidden size. */
  dFF: z.number().int().positive(),
  maxSeqLen: z.number().int().positive(),
  ropeTheta: z.number().positive().default(10000),
  rmsEps: z.number().positive().default(1e-5),
  tieEmbeddings: z.boolean().default(true),
  /** Per-head size when it is not dModel / nHeads (Llama-3 variants, Qwen3). */
  headDim: z.number().int().positive().optional(),
  /** Biases on the q/k/v projections (Qwen2). */
  attnBias: z.boolean().default(false),
  /** RMSNorm over each head of q and k before RoPE (Qwen3). */
  qkNorm: z.boolean().default(false),
  /** Llama-3's rotary frequency scaling (rope_scaling of type llama3). */
  ropeScaling: z
    .object({
      type: z.literal('llama3'),
      factor: z.number().positive(),
      lowFreqFactor: z.number().positive(),
      highFreqFactor: z.number().positive(),
      originalMaxPositionEmbeddings: z.number().int().positive(),
    })
    .optional(),
  /** Scalar value head (critic / reward model). */
  valueHead: z.boolean().default(false),
  /** Vision input: images are cut into patches of this size and projected to dModel as a prefix. */
  vision: z
    .object({
      patchSize: z.number().int().positive(),
      channels: z.number().int().positive().default(3),
      maxPatches: z.number().int().positive(),
    })
    .optional(),
  initStd: z.number().positive().default(0.02),
  /** The config.json the model was read from (an imported HF model's own fields and architecture, written back on save). */
  hfConfig: z.record(z.unknown()).optional(),
});
export type ModelConfig = z.infer<typeof ModelConfigSchema>;
export type ModelConfigInput = z.input<typeof ModelConfigSchema>;

export function headDim(c: ModelConfig): number {
  return c.headDim ?? c.dModel / c.nHeads;
}

export function makeConfig(input: ModelConfigInput): ModelConfig {
  const c = ModelConfigSchema.parse(input);
  if (c.headDim === undefined && c.dModel % c.nHeads !== 0)
    throw new Error(`model config: dModel ${c.dModel} is not divisible by nHeads ${c.nHeads}`);
  if (c.nHeads % c.nKvHeads !== 0)
    throw new Error(`model config: nHeads ${c.nHeads} is not divisible by nKvHeads ${c.nKvHeads}`);
  if (headDim(c) % 2 !== 0)
    throw new Error(`model config: head dimension ${headDim(c)} must be even for rotary embeddings`);
  return c;
}

/** Named sizes from about 0.4M to 100M parameters (with a vocabulary of about 512 unless given). */
export const MODEL_PRESETS: Record<string, Omit<ModelConfigInput, 'vocabSize'>> = {
  'tiny-0.4m': { dModel: 96, nLayers: 4, nHeads: 4, nKvHeads: 4, dFF: 256, maxSeqLen: 256 },
  'small-3m': { dModel: 256, nLayers: 4, nHeads: 8, nKvHeads: 8, dFF: 704, maxSeqLen: 512 },
  'base-10m': { dModel: 384, nLayers: 6, nHeads: 6, nKvHeads: 6, dFF: 1024, maxSeqLen: 512 },
  'medium-25m': { dModel: 512, nLayers: 8, nHeads: 8, nKvHeads: 4, dFF: 1408, maxSeqLen: 1024 },
  'large-100m': { dModel: 768, nLayers: 14, nHeads: 12, nKvHeads: 4, dFF: 2048, maxSeqLen: 1024 },
};

export function presetConfig(name: string, vocabSize: number, overrides: Partial<ModelConfigInput> = {}): ModelConfig {
  const p = MODEL_PRESETS[name];
  if (!p) throw new Error(`unknown model size '${name}'; known: ${Object.keys(MODEL_PRESETS).join(', ')}`);
  return makeConfig({ ...p, vocabSize, ...overrides });
}

export function countParams(c: ModelConfig): number {
  const hd = headDim(c);
  const attn = c.dModel * (c.nHeads * hd) * 2 + c.dModel * (c.nKvHeads * hd) * 2;
  const mlp = 3 * c.dModel * c.dFF;
  const bias = c.attnBias ? (c.nHeads + 2 * c.nKvHeads) * hd : 0;
  const qkNorm = c.qkNorm ? 2 * hd : 0;
  const perLayer = attn + mlp + 2 * c.dModel + bias + qkNorm;
  let n = c.vocabSize * c.dModel + c.nLayers * perLayer + c.dModel;
  if (!c.tieEmbeddings) n += c.vocabSize * c.dModel;
  if (c.valueHead) n += c.dModel + 1;
  if (c.vision)
    n +=
      c.vision.patchSize * c.vision.patchSize * c.vision.channels * c.dModel +
      c.dModel +
      c.vision.maxPatches * c.dModel;
  return n;
}
