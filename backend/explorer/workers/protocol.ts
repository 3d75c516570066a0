// Messages between the rollout pool (main thread) and its worker threads.
import type { ModelConfig } from '../../model/config.js';
import type { BackendName } from '../../model/engine.js';
import type { RepeatOptions } from '../repeat.js';
import type { TokenizerTransfer } from '../../model/tokenizer/transfer.js';

export interface WeightTensor {
  shape: number[];
  data: Float32Array;
}

export interface GenJobOptions {
  maxNewTokens: number;
  temperature?: number;
  topK?: number;
  topP?: number;
  stopTokens?: number[];
  stopStrings?: string[];
  seed?: number;
  /** Vision prefix rows for this job's prompts, flattened [B, P, D]. */
  prefix?: { shape: [number, number, number]; data: Float32Array };
}

export type ToWorker =
  | { type: 'init'; config: ModelConfig; tokenizer: TokenizerTransfer; backend?: BackendName }
  | { type: 'weights'; version: number; tensors: Record<string, WeightTensor> }
  | {
      type: 'generate';
      job: number;
      version: number;
      prompts: number[][];
      opts: GenJobOptions;
      repeat: RepeatOptions | null;
      fault?: 'hang' | 'crash';
    };

export interface WorkerGeneration {
  tokens: number[];
  text: string;
  logprobs: number[];
  finishReason: 'stop' | 'length' | 'repeat';
}

export type FromWorker =
  | { type: 'ready'; backend: string }
  | { type: 'weights_loaded'; version: number; ms: number }
  | { type: 'result'; job: number; version: number; generations: WorkerGeneration[]; ms: number; repeats: number }
  | { type: 'error'; job?: number; message: string };
