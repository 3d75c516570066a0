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

  // Left padding keeps the last prompt token of every row at the same column; padded keys are
  // masked, and rotary embeddings only see relative positions, so logits match an unpadded run.
  const ids = new Int32Array(B * maxLen).fill(tokenizer.padId);
  const mask = new Float32Array(B * maxLen);
  prompts.forEach((p, b) => {
    const off = maxLen - p.length;
    for (let t = 0; t < p.length; t++) {
      ids[b * maxLen + off + t] = p[t]!;
      mask[b * maxLen + off + t] = 1;
    }
  });

  const out: Generation[] = prompts.map(() => ({
    tokens: [],
    text: '',
    logprobs: [],
    finishReason: 'length' as const,
  }));
  const done = new Array<boolean>(B).fill(false);
  let cache: KVCache | undefined;
  let logits: tf.Tensor2D | undefined;
  // With the native addon the prompt and every decode step are fused C calls (the prompt's positions
  // in one call); on the webgpu engine the tfjs model prefills and a fused GPU step decodes
  // (webgpu-decode.ts), sampling on the GPU where no top-k / top-p needs the sorted logits; otherwise
  // the tfjs model prefills and decodes.
  let native: NativeDecoder | undefined;
  let gpu: GpuDecoder | undefined;
  const V = model.config.vocabSize;
  const gpuSampling = (sp.topK <= 0 || sp.topK >= V) && sp.topP >= 1;
  try {
    let data: Float32Array | undefined;
    if (!opts.prefix && nativeDecodeAvailable(model)) {
      native = new NativeDecoder(
        model,
        { ids, mask, B, T: maxLen },
        maxNew,
        opts.decodeThreads ?? decodeThreadsFromEnv(),
      );
      data = native.prefill();
    } else {
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
      logits = r.last;
      cache = r.cache;
      if (maxNew > 1 && gpuDecodeAvailable(model)) {
        gpu = new GpuDecoder(model, cache, maxNew);
        disposeCache(cache); // copied into the decoder's own
        cache = undefined;
      }
    }
    for (let step = 0; step < maxNew; step++) {
      const next = new Int32Array(B).fill(tokenizer.padId);
      // On the GPU: one draw per live row, in row order (the draws sampleToken would take), 2 x B numbers back.
      let picked: { token: number; logprob: number }[] | undefined;
      // After the decoder's first step the logits are its own, on the GPU (`logits` is then undefined).
      if (gpu && gpuSampling) {
        const draws = new Float32Array(B);
        for (let b = 0; b < B; b++) if (!done[b] && sp.temperature > 0) draws[b] = rng.next();
        picked = logits ? await sampleOnGpu(logits, draws, sp.temperature) : await gpu.sample(draws, sp.temperature);
      } else if (gpu && !logits) data = await gpu.readLogits();
      else if (!native) data = (await logits!.data()) as Float32Array;
      for (let b = 0; b < B; b++) {
        if (done[b]) continue;
        const { token, logprob } = picked ? picked[b]! : sampleToken(data!.subarray(b * V, (b + 1) * V), sp, rng);
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
      if (native) {
        data = native.step(next);
        continue;
      }
      if (gpu) {
        logits?.dispose();
        logits = undefined;
        gpu.step(next);
        continue;
      }
      const prev = cache!;
      const r = tidy(() => {
        const f = model.forward(tf.tensor2d(next, [B, 1], 'int32'), { cache: prev, returnCache: true });
        return { last: tf.reshape(f.logits, [B, -1]) as tf.Tensor2D, cache: f.cache! };
      });
      logits!.dispose();
      disposeCache(prev);
      logits = r.last;
      cache = r.cache;
    }
  } finally {
    if (logits && !logits.isDisposed) logits.dispose();
    if (cache) disposeCache(cache);
    gpu?.dispose();
  }
  for (const g of out) g.text = tokenizer.decode(g.tokens, { skipSpecial: true });
  return out;
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
