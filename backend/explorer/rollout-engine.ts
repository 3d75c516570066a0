// The rollout engines a run can sample with (`explorer.engine`), behind one interface: a rollout
// model that gets each synced version's weights through setWeights. `native` is this project's
// decode (in the run's own process, or on `explorer.workers` threads); `llama-cpp` is llama.cpp on a
// GGUF export of each version (llama-cpp-model.ts); `auto` picks one of the two per batch, measured
// (auto-engine.ts).
import type { ModelConfig } from '../model/config.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import type { Transformer } from '../model/transformer.js';
import { AutoRolloutModel } from './auto-engine.js';
import { LlamaCppRolloutModel } from './llama-cpp-model.js';
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
  /** The explorer runs beside the trainer in this process (memory placement, one_step_off / async): auto's native side then samples on a worker thread, never the trainer's live weights. */
  overlap?: boolean;
}

/** The synced rollout model of a run, or undefined where the policy itself samples in this process (native, one worker). */
export function makeRolloutEngine(o: RolloutEngineOptions): SyncedRolloutModel | undefined {
  if (o.engine === 'llama-cpp') {
    if (o.config.vision) throw new Error('explorer.engine: llama-cpp cannot sample a vision model (no GGUF form); use native');
    return new LlamaCppRolloutModel({ tokenizer: o.tokenizer, maxSeqLen: o.config.maxSeqLen, disposeReplaced: o.disposeReplaced });
  }
  if (o.engine === 'auto') {
    // A vision model has no GGUF form: auto is native then (its prompts carry image prefixes).
    if (o.config.vision) logger('engine-auto').info('explorer.engine auto: vision model, sampling with native only');
    else {
      const nativeWorkers = o.workers > 1 || o.overlap ? new WorkerRolloutModel({ workers: o.workers, config: o.config, tokenizer: o.tokenizer }) : undefined;
      return new AutoRolloutModel({ tokenizer: o.tokenizer, config: o.config, disposeReplaced: o.disposeReplaced, nativeWorkers });
    }
  }
  return o.workers > 1 ? new WorkerRolloutModel({ workers: o.workers, config: o.config, tokenizer: o.tokenizer }) : undefined;
}
