// The rollout engine `llama-cpp` (`explorer.engine: llama-cpp`): llama.cpp (node-llama-cpp, CPU) samples
// from a GGUF (F32) export of each synced version, the role vLLM plays in the reference framework.
// On every weight sync the current weights (LoRA adapters merged) are written to a GGUF in a temp
// folder and loaded; the previous file and model are dropped. Behaviour log-probs: llama.cpp gives
// the probability of the sampled token after its sampler chain; without top-k / top-p truncation that
// is the temperature-scaled probability this project records, so those are the engine's. With
// truncation llama.cpp's number is renormalised over the kept tokens, so the log-probs are recomputed
// by this project's forward pass on the same version's weights (the trainer's model), and each
// generation says which (`logprobsSource`).
import { InputError } from '../core/errors.js';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Llama, LlamaContext, LlamaContextSequence, LlamaModel, Token } from 'node-llama-cpp';
import { logger } from '../core/log.js';
import { removeTempDir, tempDirUntilExit } from '../core/temp-dir.js';
import { tf } from '../model/engine.js';
import { exportGguf } from '../model/export/gguf.js';
import { EMULATED_GPU } from '../model/webgpu.js';
import type { GenerateOptions } from '../model/generate.js';
import { tokenLogprobs } from '../model/logprobs.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import type { Transformer } from '../model/transformer.js';
import type { RolloutGeneration, RolloutModel } from './workflow.js';

const log = logger('llama-cpp');

/** Sequences of one llama.cpp context (a generate() call with more prompts runs in chunks). */
const MAX_SEQUENCES = 16;

/** `explorer.llama_cpp_gpu`: auto (the first prebuilt GPU build that finds a device, else the CPU), off, or one backend. */
export type LlamaGpu = 'auto' | 'off' | 'cuda' | 'vulkan' | 'metal';

const llamaInstances = new Map<LlamaGpu, Promise<Llama>>();
/**
 * One llama.cpp instance per process and GPU choice (node-llama-cpp: a second getLlama after dispose
 * never resolves). Only prebuilt binaries (`build: 'never'`): nothing is compiled on the user's machine.
 * A named backend that cannot start is an error naming the config field.
 */
export function sharedLlama(gpu: LlamaGpu = 'auto'): Promise<Llama> {
  let p = llamaInstances.get(gpu);
  if (!p) {
    p = import('node-llama-cpp').then(async (m) => {
      let llama: Llama;
      try {
        llama = await m.getLlama({ gpu: gpu === 'off' ? false : gpu, build: 'never', logLevel: m.LlamaLogLevel.error });
      } catch (err) {
        throw new Error(
          `explorer.llama_cpp_gpu: ${gpu}: llama.cpp could not start on it (${err instanceof Error ? err.message : String(err)}); use auto or off`,
        );
      }
      // A device that emulates a GPU on the CPU (SwiftShader, llvmpipe): llama.cpp refuses it at model
      // load ("Unsupported device": no 16-bit storage) and then crashes the process, so it is never
      // used: auto falls back to the CPU build, a named backend is an error before any load.
      const { devices } = await llamaDevice(llama);
      if (llama.gpu && devices.length > 0 && devices.every((d) => EMULATED_GPU.test(d))) {
        const why = `${llama.gpu}: ${devices.join(', ')} emulates a GPU on the CPU, which llama.cpp does not support`;
        if (gpu !== 'auto') throw new InputError(`explorer.llama_cpp_gpu: ${gpu}: ${why}; use auto or off`);
        log.info(`llama.cpp: ${why}; sampling with its CPU build`);
        return sharedLlama('off');
      }
      return llama;
    });
    llamaInstances.set(gpu, p);
  }
  return p;
}

/** What llama.cpp runs on: the backend (false: the CPU) and its devices, e.g. `vulkan: NVIDIA H100`. */
export async function llamaDevice(llama: Llama): Promise<{ gpu: string | false; devices: string[] }> {
  const devices = llama.gpu ? await llama.getGpuDeviceNames().catch(() => []) : [];
  return { gpu: llama.gpu, devices };
}

export interface LlamaCppRolloutOptions {
  tokenizer: Tokenizer;
  maxSeqLen: number;
  /** Dispose a model given to setWeights when a newer one replaces it, and at close (the explorer process owns nothing else). */
  disposeReplaced?: boolean;
  /** llama.cpp threads (default: node-llama-cpp's choice). */
  threads?: number;
  /** explorer.llama_cpp_gpu (default auto). */
  gpu?: LlamaGpu;
}

export interface LlamaCppMetrics {
  engine: 'llama-cpp';
  syncs: number;
  gguf_export_s: number;
  gguf_load_s: number;
  generate_s: number;
  samples: number;
  tokens: number;
  /** Samples whose behaviour log-probs were recomputed by this project's forward pass. */
  recomputed: number;
  /** The llama.cpp backend it samples on (false: the CPU) and its devices, known after the first sync. */
  gpu?: string | false;
  gpu_devices?: string[];
}

/** Whether llama.cpp's sampled-token probability is the full temperature-scaled one (no truncation). */
export function engineLogprobsExact(opts: Pick<GenerateOptions, 'topK' | 'topP'>): boolean {
  return (opts.topK ?? 0) <= 0 && (opts.topP ?? 1) >= 1;
}

export class LlamaCppRolloutModel implements RolloutModel {
  version = -1;
  readonly tokenizer: Tokenizer;
  readonly maxSeqLen: number;
  /** The model given to setWeights is kept (log-prob recomputation) until the next one replaces it. */
  readonly holdsModel = true;
  /** Each synced version's GGUF: removed on close(), or at exit by a process that never closes. */
  private readonly dir = tempDirUntilExit('rft-llama-cpp-');
  private native?: Transformer;
  private loaded?: { model: LlamaModel; file: string };
  private ctx?: { ctx: LlamaContext; seqs: LlamaContextSequence[]; sequences: number; perSeq: number };
  private closed = false;
  private readonly m: LlamaCppMetrics = {
    engine: 'llama-cpp',
    syncs: 0,
    gguf_export_s: 0,
    gguf_load_s: 0,
    generate_s: 0,
    samples: 0,
    tokens: 0,
    recomputed: 0,
  };

  constructor(private readonly opts: LlamaCppRolloutOptions) {
    this.tokenizer = opts.tokenizer;
    this.maxSeqLen = opts.maxSeqLen;
  }

  metrics(): LlamaCppMetrics {
    return { ...this.m };
  }

  /** The GGUF file of the loaded version (tests, logs). */
  get ggufFile(): string | undefined {
    return this.loaded?.file;
  }

  /** Export `model` (adapters merged) to a GGUF, load it in llama.cpp and drop the previous version. */
  async setWeights(model: Transformer, version: number): Promise<void> {
    if (this.closed) throw new Error('llama.cpp rollout model is closed');
    const t0 = performance.now();
    const file = join(this.dir, `v${version}-${this.m.syncs}.gguf`);
    await exportGguf(model, this.tokenizer, file, { dtype: 'f32' });
    const t1 = performance.now();
    const llama = await sharedLlama(this.opts.gpu ?? 'auto');
    if (this.m.gpu === undefined) {
      const d = await llamaDevice(llama);
      this.m.gpu = d.gpu;
      this.m.gpu_devices = d.devices;
      log.info(
        `llama.cpp samples on ${d.gpu ? `${d.gpu}: ${d.devices.join(', ') || 'no device named'}` : 'the CPU'} (explorer.llama_cpp_gpu ${this.opts.gpu ?? 'auto'})`,
      );
    }
    const next = await llama.loadModel({ modelPath: file });
    await this.dropLoaded();
    this.loaded = { model: next, file };
    if (this.opts.disposeReplaced && this.native && this.native !== model) this.native.dispose();
    this.native = model;
    this.version = version;
    this.m.syncs++;
    this.m.gguf_export_s += (t1 - t0) / 1000;
    this.m.gguf_load_s += (performance.now() - t1) / 1000;
    log.debug(
      `v${version}: ${file} exported in ${((t1 - t0) / 1000).toFixed(2)} s, loaded in ${((performance.now() - t1) / 1000).toFixed(2)} s`,
    );
  }

  async generate(prompts: number[][], opts: GenerateOptions): Promise<RolloutGeneration[]> {
    if (this.closed) throw new Error('llama.cpp rollout model is closed');
    if (!this.loaded || !this.native) throw new Error('llama.cpp rollout model: setWeights() before generate()');
    if (opts.prefix)
      throw new InputError('explorer.engine llama-cpp: vision prefixes are not supported (use engine native)');
    if (prompts.length === 0) return [];
    const t0 = performance.now();
    const longest = Math.max(...prompts.map((p) => p.length));
    if (longest === 0) throw new Error('generate: empty prompt (a prompt needs at least one token, e.g. bos)');
    const maxNew = Math.min(opts.maxNewTokens, this.maxSeqLen - longest);
    if (maxNew <= 0)
      throw new Error(`generate: prompt of ${longest} tokens leaves no room in maxSeqLen ${this.maxSeqLen}`);
    const ctx = await this.context(Math.min(prompts.length, MAX_SEQUENCES), longest + maxNew + 1);
    const out: RolloutGeneration[] = [];
    for (let start = 0; start < prompts.length; start += ctx.sequences) {
      const chunk = prompts.slice(start, start + ctx.sequences);
      out.push(
        ...(await Promise.all(
          chunk.map((p, j) => this.sample(ctx.seqs[j]!, p, maxNew, opts, (opts.seed ?? 0) + start + j)),
        )),
      );
    }
    if (!engineLogprobsExact(opts)) {
      for (const [i, g] of out.entries())
        g.logprobs = await recomputeLogprobs(this.native, prompts[i]!, g.tokens, opts.temperature ?? 1);
      for (const g of out) g.logprobsSource = 'recomputed';
      this.m.recomputed += out.length;
    }
    this.m.samples += out.length;
    this.m.tokens += out.reduce((a, g) => a + g.tokens.length, 0);
    this.m.generate_s += (performance.now() - t0) / 1000;
    return out;
  }

  private async sample(
    seq: LlamaContextSequence,
    prompt: number[],
    maxNew: number,
    opts: GenerateOptions,
    seed: number,
  ): Promise<RolloutGeneration> {
    const stop = new Set(opts.stopTokens ?? [this.tokenizer.eosId, this.tokenizer.specialId('end')]);
    const g: RolloutGeneration = {
      tokens: [],
      text: '',
      logprobs: [],
      finishReason: 'length',
      logprobsSource: 'engine',
    };
    try {
      const temperature = opts.temperature ?? 1;
      // topK 0 / topP 1 / minP 0 turn llama.cpp's truncation off (its defaults are 40 / 0.95).
      const it = seq.evaluateWithMetadata(
        prompt as Token[],
        { confidence: true },
        { temperature, topK: opts.topK ?? 0, topP: opts.topP ?? 1, minP: 0, seed, yieldEogToken: true },
      );
      for await (const r of it) {
        const tok = r.token as number;
        g.tokens.push(tok);
        // float32 probability of the sampled token; 0 only past float32's range (then recompute below).
        g.logprobs.push(Math.log(r.confidence));
        if (stop.has(tok)) {
          g.finishReason = 'stop';
          break;
        }
        if (opts.stopStrings?.length) {
          const text = this.tokenizer.decode(g.tokens, { skipSpecial: true });
          if (opts.stopStrings.some((s) => text.includes(s))) {
            g.finishReason = 'stop';
            break;
          }
        }
        if (g.tokens.length >= maxNew) break;
      }
      // llama.cpp ended the sample itself (an end-of-generation token of its vocabulary).
      if (g.finishReason === 'length' && g.tokens.length < maxNew) g.finishReason = 'stop';
    } finally {
      // Sequences are kept for the context's life (a disposed one is not free again at once: "No sequences left").
      await seq.clearHistory();
    }
    g.text = this.tokenizer.decode(g.tokens, { skipSpecial: true });
    if (g.logprobs.some((x) => !Number.isFinite(x))) {
      g.logprobs = await recomputeLogprobs(this.native!, prompt, g.tokens, opts.temperature ?? 1);
      g.logprobsSource = 'recomputed';
      this.m.recomputed++;
    }
    return g;
  }

  /** A context with at least `sequences` sequences of `perSeq` tokens each (F32 KV cache: log-probs as in float32). */
  private async context(
    sequences: number,
    perSeq: number,
  ): Promise<{ ctx: LlamaContext; seqs: LlamaContextSequence[]; sequences: number }> {
    if (this.ctx && this.ctx.sequences >= sequences && this.ctx.perSeq >= perSeq) return this.ctx;
    await this.ctx?.ctx.dispose();
    this.ctx = undefined;
    const ctx = await this.loaded!.model.createContext({
      sequences,
      contextSize: sequences * perSeq,
      batchSize: Math.min(512, sequences * perSeq),
      flashAttention: false,
      experimentalKvCacheKeyType: 'F32',
      experimentalKvCacheValueType: 'F32',
      ...(this.opts.threads ? { threads: this.opts.threads } : {}),
    });
    this.ctx = { ctx, seqs: Array.from({ length: sequences }, () => ctx.getSequence()), sequences, perSeq };
    return this.ctx;
  }

  private async dropLoaded(): Promise<void> {
    await this.ctx?.ctx.dispose();
    this.ctx = undefined;
    if (this.loaded) {
      await this.loaded.model.dispose();
      rmSync(this.loaded.file, { force: true });
      this.loaded = undefined;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.dropLoaded();
    if (this.opts.disposeReplaced) this.native?.dispose();
    this.native = undefined;
    removeTempDir(this.dir);
  }
}

/** log p(token | prefix) of each response token under `model` at `temperature` (0 = greedy: temperature 1), one forward pass. */
export async function recomputeLogprobs(
  model: Transformer,
  prompt: number[],
  tokens: number[],
  temperature: number,
): Promise<number[]> {
  if (tokens.length === 0) return [];
  const ids = [...prompt, ...tokens];
  const t = tf.tidy(() => {
    const lp = tokenLogprobs(model, tf.tensor2d([ids], [1, ids.length], 'int32'), {
      temperature: temperature > 0 ? temperature : 1,
    }).logprobs;
    return tf.slice(lp, [0, prompt.length - 1], [1, tokens.length]);
  });
  const out = [...((await t.data()) as Float32Array)];
  t.dispose();
  return out;
}
