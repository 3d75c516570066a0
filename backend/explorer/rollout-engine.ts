// The rollout engines a run can sample with (`explorer.engine`), behind one interface: a rollout
// model that gets each synced version's weights through setWeights. `native` is this project's
// decode (in the run's own process, or on `explorer.workers` threads); `llama-cpp` is llama.cpp on a
// GGUF export of each version (llama-cpp-model.ts); `auto` picks one of the two per batch, measured
// (auto-engine.ts).
import { InputError } from '../core/errors.js';
import { countParams, type ModelConfig } from '../model/config.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import type { Transformer } from '../model/transformer.js';
import { AutoRolloutModel } from './auto-engine.js';
import { LlamaCppRolloutModel, type LlamaGpu } from './llama-cpp-model.js';
import { logger } from '../core/log.js';
import { WorkerRolloutModel } from './workers/pool.js';
import type { RolloutModel } from './workflow.js';

export type RolloutEngineName = 'native' | 'llama-cpp' | 'auto';

export interface SyncedRolloutModel extends RolloutModel {
  version: number;
  /** Keeps the model given to setWeights (the caller must not dispose or change it before the next sync). */
  readonly holdsModel?: boolean;
  setWeights(model: Transformer, version: number): Promise<void>;
  metrics(): object;
  close(): Promise<void>;
}

export interface RolloutEngineOptions {
  engine: RolloutEngineName;
  workers: number;
  config: ModelConfig;
  tokenizer: Tokenizer;
  /** llama-cpp, auto: dispose each replaced model (a process that loads every version itself). */
  disposeReplaced?: boolean;
  /** explorer.llama_cpp_gpu: where llama.cpp samples (engines llama-cpp and auto). */
  llamaGpu?: LlamaGpu;
  /** The explorer runs beside the trainer in this process (memory placement, one_step_off / async): auto's native side then samples on a worker thread, never the trainer's live weights. */
  overlap?: boolean;
}

/** The synced rollout model of a run, or undefined where the policy itself samples in this process (native, one worker). */
export function makeRolloutEngine(o: RolloutEngineOptions): SyncedRolloutModel | undefined {
  if (o.engine === 'llama-cpp') {
    if (o.config.vision)
      throw new InputError('explorer.engine: llama-cpp cannot sample a vision model (no GGUF form); use native');
    return new LlamaCppRolloutModel({
      tokenizer: o.tokenizer,
      maxSeqLen: o.config.maxSeqLen,
      disposeReplaced: o.disposeReplaced,
      gpu: o.llamaGpu,
    });
  }
  if (o.engine === 'auto') {
    // A vision model has no GGUF form: auto is native then (its prompts carry image prefixes).
    if (o.config.vision) logger('engine-auto').info('explorer.engine auto: vision model, sampling with native only');
    else {
      const nativeWorkers = o.workers > 1 || o.overlap ? workerPool(o) : undefined;
      return new AutoRolloutModel({
        tokenizer: o.tokenizer,
        config: o.config,
        disposeReplaced: o.disposeReplaced,
        nativeWorkers,
        llamaGpu: o.llamaGpu,
      });
    }
  }
  return o.workers > 1 ? workerPool(o) : undefined;
}

/** f32 weights a rollout worker may copy into its own 4 GiB wasm heap (the rest is KV cache and activations). */
const WORKER_WEIGHT_BYTES = 3 * 2 ** 30;

/**
 * Rollout worker threads, refused up front for a model whose weights cannot fit a worker's heap: each
 * worker holds its own in-heap copy, where the run's own process keeps them outside (a 1B model would
 * abort the worker with "memory access out of bounds" at its first sync).
 */
export function workerPool(
  o: Pick<RolloutEngineOptions, 'workers' | 'config' | 'tokenizer' | 'overlap'>,
): WorkerRolloutModel {
  const bytes = countParams(o.config) * 4;
  if (bytes > WORKER_WEIGHT_BYTES) {
    const why =
      o.workers > 1
        ? `explorer.workers: ${o.workers} rollout workers`
        : 'synchronizer: an explorer overlapping the trainer in one process samples on a rollout worker, which';
    throw new Error(
      `${why} each hold an in-heap copy of the weights, and this model's ${(bytes / 2 ** 30).toFixed(1)} GiB of f32 weights do not fit a worker's 4 GiB wasm heap; ` +
        `set explorer.workers: 1 (the explorer then samples with the weights outside the heap), use explorer.engine: llama-cpp, or placement: checkpoint for one_step_off / async`,
    );
  }
  return new WorkerRolloutModel({ workers: o.workers, config: o.config, tokenizer: o.tokenizer });
}
