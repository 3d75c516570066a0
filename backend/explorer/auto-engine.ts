// The rollout engine `auto` (`explorer.engine: auto`): every generate() call (one batch of prompts)
// runs on whichever of this project's native decode and llama.cpp (llama-cpp-model.ts) has sampled
// batches of that size faster, measured in this process on the run's own batches. Neither is always
// faster: on 2 cores llama.cpp wins lone sequences when the native step is memory-bound, the native
// decode wins batches (one pass over the weights for every row), and the load of a shared machine
// moves the line. A size with no measurement yet tries the prior first, then the other engine once;
// the slower one is tried again every REPROBE batches of that size. llama.cpp is synced lazily (GGUF
// export + load only when it is picked and its version is stale); its rate is its sampling rate with
// the last sync's seconds spread over the tokens a version has been sampling so far (so a run that
// syncs after every few batches does not pick it for its sampling speed alone). Each generation says
// which engine sampled it and why (`rolloutEngine`).
import type { ModelConfig } from '../model/config.js';
import { generate, type GenerateOptions } from '../model/generate.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import type { Transformer } from '../model/transformer.js';
import { logger } from '../core/log.js';
import { LlamaCppRolloutModel, type LlamaCppMetrics, type LlamaGpu } from './llama-cpp-model.js';
import type { RolloutGeneration, RolloutModel } from './workflow.js';

const log = logger('engine-auto');

export type ChosenEngine = 'native' | 'llama-cpp';

/** Batches of at most this many prompts try llama.cpp first (measured: 1 sequence, see docs/performance.md). */
export const PRIOR_LLAMA_MAX_BATCH = 1;
/** Every REPROBE-th batch of a size runs the engine measured slower, so a change of load is seen. */
export const REPROBE = 16;

/** Batch sizes measured together (a batch of 7 tells about one of 8). */
export function batchBucket(b: number): string {
  return b <= 1 ? '1' : b <= 2 ? '2' : b <= 4 ? '3-4' : b <= 8 ? '5-8' : b <= 16 ? '9-16' : '17+';
}

interface Rate {
  /** Tokens per second, exponentially averaged (half weight to the newest batch). */
  tps: number;
  batches: number;
}

interface BucketStats {
  native?: Rate;
  'llama-cpp'?: Rate;
  batches: number;
}

export interface AutoEngineMetrics {
  engine: 'auto';
  batches: Record<ChosenEngine, number>;
  /** Measured tok/s per batch-size bucket and engine. */
  tps: Record<string, Partial<Record<ChosenEngine, number>>>;
  last_choice?: { engine: ChosenEngine; reason: string };
  llama_cpp_unavailable?: string;
  llama_cpp?: LlamaCppMetrics;
  llama_cpp_sync_s?: number;
  native?: object;
}

/** The native side of `auto`: this process's own decode, or explorer.workers threads. */
export interface NativeSide extends RolloutModel {
  setWeights(model: Transformer, version: number): Promise<void>;
  metrics(): object;
  close(): Promise<void>;
}

export interface AutoEngineOptions {
  tokenizer: Tokenizer;
  config: ModelConfig;
  /** Dispose a model given to setWeights when a newer one replaces it, and at close (an explorer process). */
  disposeReplaced?: boolean;
  /** explorer.llama_cpp_gpu for the llama.cpp side. */
  llamaGpu?: LlamaGpu;
  /** Worker threads as the native side (explorer.workers > 1, or a trainer running beside the explorer); default: decode in place. */
  nativeWorkers?: NativeSide;
  /** Makes the llama.cpp side (tests give a failing one); default: a LlamaCppRolloutModel. */
  makeLlama?: () => LlamaCppRolloutModel;
  prior?: (batch: number) => ChosenEngine;
}

export class AutoRolloutModel implements RolloutModel {
  version = -1;
  readonly tokenizer: Tokenizer;
  readonly maxSeqLen: number;
  /** Keeps the model given to setWeights (native sampling in place, and the source of llama.cpp's lazy GGUF export). */
  readonly holdsModel = true;
  private model?: Transformer;
  private llama?: LlamaCppRolloutModel;
  private llamaUnavailable?: string;
  private readonly stats = new Map<string, BucketStats>();
  private readonly counts: Record<ChosenEngine, number> = { native: 0, 'llama-cpp': 0 };
  private last?: { engine: ChosenEngine; reason: string };
  /** Seconds of the last llama.cpp sync (GGUF export + load). */
  private syncS = 0;
  /** Tokens sampled per version (by either engine), for spreading a sync over a version's tokens. */
  private readonly versionTokens = new Map<number, number>();
  private closed = false;

  constructor(private readonly opts: AutoEngineOptions) {
    this.tokenizer = opts.tokenizer;
    this.maxSeqLen = opts.config.maxSeqLen;
    if (opts.config.vision) this.llamaUnavailable = 'vision model (no GGUF form)';
  }

  async setWeights(model: Transformer, version: number): Promise<void> {
    if (this.closed) throw new Error('auto rollout engine is closed');
    await this.opts.nativeWorkers?.setWeights(model, version);
    if (this.opts.disposeReplaced && this.model && this.model !== model) this.model.dispose();
    this.model = model;
    this.version = version;
  }

  metrics(): AutoEngineMetrics {
    const tps: AutoEngineMetrics['tps'] = {};
    for (const [b, s] of this.stats)
      tps[b] = {
        ...(s.native ? { native: round(s.native.tps) } : {}),
        ...(s['llama-cpp'] ? { 'llama-cpp': round(s['llama-cpp'].tps) } : {}),
      };
    return {
      engine: 'auto',
      batches: { ...this.counts },
      tps,
      ...(this.last ? { last_choice: this.last } : {}),
      ...(this.llamaUnavailable ? { llama_cpp_unavailable: this.llamaUnavailable } : {}),
      ...(this.llama ? { llama_cpp: this.llama.metrics(), llama_cpp_sync_s: round(this.syncS) } : {}),
      ...(this.opts.nativeWorkers ? { native: this.opts.nativeWorkers.metrics() } : {}),
    };
  }

  /** Which engine the next batch of `batch` prompts runs on, and why (no side effects). */
  choose(batch: number, opts: Pick<GenerateOptions, 'prefix'> = {}): { engine: ChosenEngine; reason: string } {
    if (opts.prefix) return { engine: 'native', reason: 'vision prefix (llama.cpp takes token prompts only)' };
    if (this.llamaUnavailable) return { engine: 'native', reason: `llama-cpp unavailable: ${this.llamaUnavailable}` };
    const bucket = batchBucket(batch);
    const s = this.stats.get(bucket);
    const prior = (this.opts.prior ?? ((b) => (b <= PRIOR_LLAMA_MAX_BATCH ? 'llama-cpp' : 'native')))(batch);
    const other: ChosenEngine = prior === 'native' ? 'llama-cpp' : 'native';
    if (!s?.[prior] && !s?.[other])
      return { engine: prior, reason: `batch ${batch}: no measurement at batch size ${bucket} yet, prior ${prior}` };
    if (!s[prior] || !s[other]) {
      const missing: ChosenEngine = s[prior] ? other : prior;
      return {
        engine: missing,
        reason: `batch ${batch}: probing ${missing} (only ${missing === prior ? other : prior} measured at batch size ${bucket})`,
      };
    }
    const perVersion = this.tokensPerVersion();
    const llamaTps = 1 / (1 / s['llama-cpp']!.tps + this.syncS / perVersion);
    const fast: ChosenEngine = s.native!.tps >= llamaTps ? 'native' : 'llama-cpp';
    const slow: ChosenEngine = fast === 'native' ? 'llama-cpp' : 'native';
    const figures = `native ${s.native!.tps.toFixed(1)} vs llama-cpp ${llamaTps.toFixed(1)} tok/s at batch size ${bucket}; llama-cpp samples ${s['llama-cpp']!.tps.toFixed(1)} tok/s and its sync takes ${this.syncS.toFixed(1)} s a version of ~${Math.round(perVersion)} tokens`;
    if (s.batches % REPROBE === REPROBE - 1)
      return { engine: slow, reason: `batch ${batch}: re-probing ${slow} (${figures})` };
    return { engine: fast, reason: `batch ${batch}: ${fast} measured faster (${figures})` };
  }

  async generate(prompts: number[][], opts: GenerateOptions): Promise<RolloutGeneration[]> {
    if (this.closed) throw new Error('auto rollout engine is closed');
    if (!this.model) throw new Error('auto rollout engine: setWeights() before generate()');
    if (prompts.length === 0) return [];
    let choice = this.choose(prompts.length, opts);
    let out: RolloutGeneration[] | undefined;
    let ms = 0;
    if (choice.engine === 'llama-cpp') {
      try {
        await this.syncLlama();
        const t0 = performance.now();
        out = await this.llama!.generate(prompts, opts);
        ms = performance.now() - t0;
      } catch (e) {
        // node-llama-cpp missing, a tokenizer with no GGUF vocabulary, a failed load: native from now on.
        this.llamaUnavailable = (e as Error).message;
        log.warn(`llama-cpp failed, sampling with native from now on: ${this.llamaUnavailable}`);
        await this.llama?.close().catch(() => undefined);
        this.llama = undefined;
        choice = { engine: 'native', reason: `llama-cpp unavailable: ${this.llamaUnavailable}` };
      }
    }
    if (!out) {
      const t0 = performance.now();
      out = await this.viaNative(prompts, opts);
      ms = performance.now() - t0;
    }
    this.record(prompts.length, choice, out, ms);
    for (const g of out) g.rolloutEngine = { name: choice.engine, reason: choice.reason };
    return out;
  }

  /** llama.cpp on the current version: made at its first pick, synced when its version is stale (timed for choose()). */
  private async syncLlama(): Promise<void> {
    this.llama ??=
      this.opts.makeLlama?.() ??
      new LlamaCppRolloutModel({ tokenizer: this.tokenizer, maxSeqLen: this.maxSeqLen, gpu: this.opts.llamaGpu });
    if (this.llama.version === this.version) return;
    const t0 = performance.now();
    await this.llama.setWeights(this.model!, this.version);
    this.syncS = (performance.now() - t0) / 1000;
  }

  /** Average tokens sampled per version: over the finished versions, else the current one's so far. */
  private tokensPerVersion(): number {
    const done = [...this.versionTokens].filter(([v]) => v !== this.version).map(([, n]) => n);
    const avg = done.length
      ? done.reduce((a, b) => a + b, 0) / done.length
      : (this.versionTokens.get(this.version) ?? 0);
    return Math.max(1, avg);
  }

  private async viaNative(prompts: number[][], opts: GenerateOptions): Promise<RolloutGeneration[]> {
    if (this.opts.nativeWorkers) return this.opts.nativeWorkers.generate(prompts, opts);
    const gens = await generate(this.model!, this.tokenizer, prompts, opts);
    return gens.map((g) => ({ ...g, logprobsSource: 'engine' as const }));
  }

  private record(
    batch: number,
    choice: { engine: ChosenEngine; reason: string },
    out: RolloutGeneration[],
    ms: number,
  ): void {
    const bucket = batchBucket(batch);
    const s = this.stats.get(bucket) ?? { batches: 0 };
    this.stats.set(bucket, s);
    s.batches++;
    this.counts[choice.engine]++;
    const tokens = out.reduce((a, g) => a + g.tokens.length, 0);
    this.versionTokens.set(this.version, (this.versionTokens.get(this.version) ?? 0) + tokens);
    // Only recent versions count (a run's batch sizes and lengths change between stages).
    if (this.versionTokens.size > 8) this.versionTokens.delete(this.versionTokens.keys().next().value!);
    if (tokens > 0 && ms > 0 && !out.some((g) => g.infraError)) {
      const tps = tokens / (ms / 1000);
      const r = s[choice.engine];
      s[choice.engine] = r ? { tps: (r.tps + tps) / 2, batches: r.batches + 1 } : { tps, batches: 1 };
    }
    const changed = this.last?.engine !== choice.engine;
    this.last = choice;
    (changed ? log.info : log.debug)(`${choice.engine}: ${choice.reason}`);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.llama?.close();
    await this.opts.nativeWorkers?.close();
    if (this.opts.disposeReplaced) this.model?.dispose();
    this.model = undefined;
  }
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}
