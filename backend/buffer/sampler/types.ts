// Samplers: how the trainer reads batches out of the buffer (FIFO, priority replay, expert, mixed).
import { InfrastructureError } from '../../core/errors.js';
import type { Experience } from '../../core/types.js';
import type { ExperienceStore } from '../storage/types.js';

export interface SampleRequest {
  batchSize: number;
  /** The trainer's current model version (for the staleness bound). */
  currentVersion: number;
  /** With the sampler's consumer: the batch is recorded, and asking again for a step returns the same batch. */
  step?: number;
  /** How long to wait for enough experiences; default 60 s. 0: try once. */
  timeoutMs?: number;
  /** Called whenever the reason for waiting changes (for logs and the UI). */
  onWait?: (w: WaitStatus) => void;
  signal?: AbortSignal;
}

export interface SampleBatch {
  experiences: Experience[];
  /** How many of them are expert experiences (first in the batch). */
  expertCount: number;
  /** True when the batch was recorded for this step before (a resumed trainer) and is returned again. */
  replayed: boolean;
  waitedMs: number;
}

export type WaitReason = 'empty' | 'all_stale' | 'not_enough';
export interface WaitStatus {
  reason: WaitReason;
  sampler: string;
  needed: number;
  ready: number;
  stale: number;
  /** Rows with model_version below this were skipped as stale (null: no bound). */
  minVersion: number | null;
  message: string;
}

export class SampleTimeoutError extends InfrastructureError {
  constructor(
    readonly status: WaitStatus,
    waitedMs: number,
  ) {
    super(`sampler '${status.sampler}' timed out after ${Math.round(waitedMs)} ms: ${status.message}`);
    this.name = 'SampleTimeoutError';
  }
}

export interface Sampler {
  readonly name: string;
  sample(req: SampleRequest): Promise<SampleBatch>;
  /** Why a read of n would wait now (null: it would not). */
  waitStatus(n: number, currentVersion: number): Promise<WaitStatus | null>;
}

export interface SamplerConfig {
  type: string;
  /** Records batches under this name so a resumed trainer gets the same batch per step. */
  consumer?: string;
  /** Takes only this run's experiences and records batches under (run, consumer): runs sharing a database stay apart. */
  runId?: string;
  /** FIFO / priority: only experiences with model_version >= current - maxStaleness. Default: no bound. */
  maxStaleness?: number;
  /** Priority / expert: never take an experience more often than this. */
  maxUses?: number;
  /** Priority: score multiplier per use (default 0.5). */
  useDecay?: number;
  /** Priority: score halves every halfLifeMs of age (default 10 min). */
  halfLifeMs?: number;
  /** Mixed: share of expert experiences, ceil(ratio x B) (default 0.5). */
  expertRatio?: number;
  /** Mixed: use limit of the expert part (default: none). */
  expertMaxUses?: number;
  /** Mixed: the sampler for the usual part (default 'fifo'). */
  usual?: string;
}

export type SamplerFactory = (store: ExperienceStore, cfg: SamplerConfig) => Sampler;
