// Batched generation with a KV cache: many prompts at once, left-padded, seeded sampling,
// stop tokens / strings, and the behaviour log-prob of every sampled token.
import { tf, tidy } from './engine.js';
import { Rng } from '../core/rng.js';
import { InputError } from '../core/errors.js';
import type { Tokenizer } from './tokenizer/types.js';
import type { KVCache, Transformer } from './transformer.js';
import { sampleToken } from './sampling.js';
import { NativeDecoder, decodeThreadsFromEnv, nativeDecodeAvailable, type DecodeThreads } from './native-decode.js';
import { GpuDecoder, gpuDecodeAvailable, sampleOnGpu } from './webgpu-decode.js';

export interface GenerateOptions {
  maxNewTokens: number;
  temperature?: number;
  topK?: number;
  topP?: number;
  /** Token ids that end a sample (included in its tokens). Default: eos and <|end|>. */
  stopTokens?: number[];
  /** Strings that end a sample once its decoded text contains them (kept in the text). */
  stopStrings?: string[];
  seed?: number;
  /** Vision prefix embeddings per prompt [B, P, D]. */
  prefix?: tf.Tensor3D;
  /** BLAS threads of the native decode step, or 'auto' (default: RFT_DECODE_THREADS, else 1). */
  decodeThreads?: DecodeThreads;
}

export interface Generation {
  /** Generated token ids (prompt excluded). */
  tokens: number[];
  /** Decoded generated text, special tokens dropped. */
  text: string;
  /** Log-prob of each generated token under the sampling distribution (temperature applied). */
  logprobs: number[];
  finishReason: 'stop' | 'length';
}

export async function generate(
  model: Transformer,
  tokenizer: Tokenizer,
  prompts: number[][],
  opts: GenerateOptions,
): Promise<Generation[]> {
  if (prompts.length === 0) return [];
  if (opts.prefix && new Set(prompts.map((p) => p.length)).size > 1)
    return generateGroupedByLength(model, tokenizer, prompts, opts);
  const B = prompts.length;
  const rng = new Rng(opts.seed ?? 0);
  const sp = { temperature: opts.temperature ?? 1, topK: opts.topK ?? 0, topP: opts.topP ?? 1 };
  const stopTokens = new Set(opts.stopTokens ?? [tokenizer.eosId, tokenizer.specialId('end')]);
  const maxLen = Math.max(...prompts.map((p) => p.length));
  if (maxLen === 0) throw new Error('generate: empty prompt (a prompt needs at least one token, e.g. bos)');
  const room = model.config.maxSeqLen - maxLen;
  const maxNew = Math.min(opts.maxNewTokens, room);
  if (maxNew <= 0)
    // The user's model or config decides this: an input error that says which setting, not a bug's stack.
    throw new InputError(
      `a prompt of ${maxLen} tokens leaves no room to answer in the model's context of ${model.config.maxSeqLen} positions (model.max_seq_len, or max_position_embeddings in the model's config.json)`,
    );
  const { ids, mask } = leftPad(prompts, maxLen, tokenizer.padId);

  const out: Generation[] = prompts.map(() => ({
    tokens: [],
    text: '',
    logprobs: [],
    finishReason: 'length' as const,
  }));
  const done = new Array<boolean>(B).fill(false);
  const st: Decoding = {};
  const V = model.config.vocabSize;
  const gpuSampling = (sp.topK <= 0 || sp.topK >= V) && sp.topP >= 1;
  try {
    prefill(st, model, { ids, mask, B, T: maxLen }, maxNew, opts);
    for (let step = 0; step < maxNew; step++) {
      const next = new Int32Array(B).fill(tokenizer.padId);
      const picked = await nextLogits(st, done, sp.temperature, gpuSampling, rng);
      for (let b = 0; b < B; b++) {
        if (done[b]) continue;
        const { token, logprob } = picked ? picked[b]! : sampleToken(st.data!.subarray(b * V, (b + 1) * V), sp, rng);
        const g = out[b]!;
        g.tokens.push(token);
        g.logprobs.push(logprob);
        next[b] = token;
        if (stopTokens.has(token)) {
          done[b] = true;
          g.finishReason = 'stop';
        } else if (opts.stopStrings?.length) {
          const text = tokenizer.decode(g.tokens, { skipSpecial: true });
          if (opts.stopStrings.some((s) => text.includes(s))) {
            done[b] = true;
            g.finishReason = 'stop';
          }
        }
      }
      if (done.every(Boolean) || step === maxNew - 1) break;
      decodeStep(st, model, next);
    }
  } finally {
    if (st.logits && !st.logits.isDisposed) st.logits.dispose();
    if (st.cache) disposeCache(st.cache);
    st.gpu?.dispose();
  }
  for (const g of out) g.text = tokenizer.decode(g.tokens, { skipSpecial: true });
  return out;
}

/**
 * Left padding keeps the last prompt token of every row at the same column; padded keys are
 * masked, and rotary embeddings only see relative positions, so logits match an unpadded run.
 */
function leftPad(prompts: number[][], maxLen: number, padId: number): { ids: Int32Array; mask: Float32Array } {
  const B = prompts.length;
  const ids = new Int32Array(B * maxLen).fill(padId);
  const mask = new Float32Array(B * maxLen);
  prompts.forEach((p, b) => {
    const off = maxLen - p.length;
    for (let t = 0; t < p.length; t++) {
      ids[b * maxLen + off + t] = p[t]!;
      mask[b * maxLen + off + t] = 1;
    }
  });
  return { ids, mask };
}

/**
 * What decodes, and what it holds between steps (released by generate's `finally`). With the native
 * addon the prompt and every decode step are fused C calls (the prompt's positions in one call); on
 * the webgpu engine the tfjs model prefills and a fused GPU step decodes (webgpu-decode.ts), sampling
 * on the GPU where no top-k / top-p needs the sorted logits; otherwise the tfjs model prefills and decodes.
 */
interface Decoding {
  native?: NativeDecoder;
  gpu?: GpuDecoder;
  cache?: KVCache;
  logits?: tf.Tensor2D;
  /** The last position's logits on the host [B * V] (native, or read back). */
  data?: Float32Array;
}

/** The prompts' pass: the first logits, and the decoder the steps run on. */
function prefill(
  st: Decoding,
  model: Transformer,
  batch: { ids: Int32Array; mask: Float32Array; B: number; T: number },
  maxNew: number,
  opts: GenerateOptions,
): void {
  const { ids, mask, B, T: maxLen } = batch;
  if (!opts.prefix && nativeDecodeAvailable(model)) {
    st.native = new NativeDecoder(model, batch, maxNew, opts.decodeThreads ?? decodeThreadsFromEnv());
    st.data = st.native.prefill();
    return;
  }
  const r = tidy(() => {
    const f = model.forward(tf.tensor2d(ids, [B, maxLen], 'int32'), {
      attentionMask: tf.tensor2d(mask, [B, maxLen]),
      returnCache: true,
      prefix: opts.prefix,
    });
    const T = f.logits.shape[1];
    return {
      last: tf.reshape(tf.slice(f.logits, [0, T - 1, 0], [B, 1, -1]), [B, -1]) as tf.Tensor2D,
      cache: f.cache!,
    };
  });
  st.logits = r.last;
  st.cache = r.cache;
  if (maxNew > 1 && gpuDecodeAvailable(model)) {
    st.gpu = new GpuDecoder(model, st.cache, maxNew);
    disposeCache(st.cache); // copied into the decoder's own
    st.cache = undefined;
  }
}

/**
 * The step's logits where sampling needs them: the GPU's draws (one per live row, in row order: the
 * draws sampleToken would take; 2 x B numbers back), or `st.data` on the host.
 */
async function nextLogits(
  st: Decoding,
  done: boolean[],
  temperature: number,
  gpuSampling: boolean,
  rng: Rng,
): Promise<{ token: number; logprob: number }[] | undefined> {
  const { gpu, logits } = st;
  // After the decoder's first step the logits are its own, on the GPU (`logits` is then undefined).
  if (gpu && gpuSampling) {
    const B = done.length;
    const draws = new Float32Array(B);
    for (let b = 0; b < B; b++) if (!done[b] && temperature > 0) draws[b] = rng.next();
    return logits ? await sampleOnGpu(logits, draws, temperature) : await gpu.sample(draws, temperature);
  }
  if (gpu && !logits) st.data = await gpu.readLogits();
  else if (!st.native) st.data = (await logits!.data()) as Float32Array;
  return undefined;
}

/** One decode step on the sampled tokens NEXT [B]: the next logits, and the cache grown by one position. */
function decodeStep(st: Decoding, model: Transformer, next: Int32Array): void {
  if (st.native) {
    st.data = st.native.step(next);
    return;
  }
  if (st.gpu) {
    st.logits?.dispose();
    st.logits = undefined;
    st.gpu.step(next);
    return;
  }
  const B = next.length;
  const prev = st.cache!;
  const r = tidy(() => {
    const f = model.forward(tf.tensor2d(next, [B, 1], 'int32'), { cache: prev, returnCache: true });
    return { last: tf.reshape(f.logits, [B, -1]) as tf.Tensor2D, cache: f.cache! };
  });
  st.logits!.dispose();
  disposeCache(prev);
  st.logits = r.last;
  st.cache = r.cache;
}

function disposeCache(c: KVCache): void {
  for (const l of c.layers) {
    l.k.dispose();
    l.v.dispose();
  }
  c.keyMask.dispose();
}

/** With a vision prefix, rows of equal prompt length are generated together so no padding sits between prefix and prompt. */
async function generateGroupedByLength(
  model: Transformer,
  tokenizer: Tokenizer,
  prompts: number[][],
  opts: GenerateOptions,
): Promise<Generation[]> {
  const byLen = new Map<number, number[]>();
  prompts.forEach((p, i) => byLen.set(p.length, [...(byLen.get(p.length) ?? []), i]));
  const out = new Array<Generation>(prompts.length);
  let seedOffset = 0;
  for (const idx of byLen.values()) {
    const prefix = tf.gather(opts.prefix!, idx) as tf.Tensor3D;
    try {
      const gens = await generate(
        model,
        tokenizer,
        idx.map((i) => prompts[i]!),
        { ...opts, prefix, seed: (opts.seed ?? 0) + seedOffset++ },
      );
      idx.forEach((i, k) => (out[i] = gens[k]!));
    } finally {
      prefix.dispose();
    }
  }
  return out;
}
