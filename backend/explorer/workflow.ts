// The workflow contract: one workflow turns a batch of tasks into experiences, using a rollout
// model (the policy being trained, or an external endpoint), an environment (for multi-turn) and a
// reward model. The built-in workflows are listed by name in workflows/index.ts.
import type { Experience, Task, TaskImage } from '../core/types.js';
import type { tf } from '../model/engine.js';
import type { Generation, GenerateOptions } from '../model/generate.js';
import type { Tokenizer } from '../model/tokenizer/types.js';
import { stopTokens } from '../model/chat.js';

/**
 * One sample from a rollout model. `infraError` is set when the system could not produce it
 * (endpoint down, worker timed out after its retries): the workflow records `infra_failure`,
 * never a zero reward. `repeat`: stopped by repeat detection (a degenerate loop).
 */
export interface RolloutGeneration extends Omit<Generation, 'finishReason'> {
  finishReason: Generation['finishReason'] | 'repeat' | 'error';
  infraError?: string;
  /**
   * Where `logprobs` came from when the engine is not this project's decode: `engine` (the sampler's
   * own), `recomputed` (this project's forward pass on the same version's weights, where the engine
   * gives none that match). Workflows record it as the experience's `metadata.logprobs_source`.
   */
  logprobsSource?: 'engine' | 'recomputed';
  /** `explorer.engine: auto`: the engine that sampled this batch and why; recorded as `metadata.rollout_engine` / `rollout_engine_reason`. */
  rolloutEngine?: { name: 'native' | 'llama-cpp'; reason: string };
}

/** The experience metadata a generation brings (log-prob source, the engine `auto` picked). */
export function generationMetadata(
  g: Pick<RolloutGeneration, 'logprobsSource' | 'rolloutEngine'>,
): Record<string, string> {
  return {
    ...(g.logprobsSource ? { logprobs_source: g.logprobsSource } : {}),
    ...(g.rolloutEngine ? { rollout_engine: g.rolloutEngine.name, rollout_engine_reason: g.rolloutEngine.reason } : {}),
  };
}

/** What the explorer samples from: the local policy, worker threads, or an external OpenAI-compatible server. */
export interface RolloutModel {
  /** Weight version that produced the samples; recorded in every experience. */
  readonly version: number;
  readonly tokenizer: Tokenizer;
  /** Longest prompt + response the model takes, when it has a limit (multi-turn stops before it). */
  readonly maxSeqLen?: number;
  generate(prompts: number[][], opts: GenerateOptions): Promise<RolloutGeneration[]>;
  /** Vision models: prefix embeddings [B, P, D] of the images, to pass to generate as `prefix` (caller disposes). */
  embedImages?(images: TaskImage[]): tf.Tensor3D;
}

export interface RewardResult {
  reward: number;
  details?: Record<string, number | string | boolean>;
  /** `infra_failure` when the reward could not be computed (sandbox or service down): never trained on. */
  status: 'ok' | 'infra_failure';
  reason?: string;
  /**
   * Whether the answer is judged correct, for rewards that never reach 1 (a reward model: its score
   * against its threshold). Absent: correct means full reward.
   */
  correct?: boolean;
}

export type RewardFn = (task: Task, response: string, ctx?: { signal?: AbortSignal }) => Promise<RewardResult>;

export interface SamplingConfig {
  maxNewTokens: number;
  temperature: number;
  topK: number;
  topP: number;
}

/**
 * What a workflow samples with: the run's sampling settings plus the stop tokens of the model's
 * tokenizer (its chat's end of turn and eos), so `ctx.model.generate(prompts, ctx.sampling)` in a
 * custom workflow stops where the built-in workflows stop instead of running to max_new_tokens.
 */
export interface WorkflowSampling extends SamplingConfig {
  stopTokens: number[];
}

/** The one way a workflow context's sampling is made (every placement, evaluation included). */
export function workflowSampling(s: SamplingConfig, tok: Tokenizer): WorkflowSampling {
  return { ...s, stopTokens: stopTokens(tok) };
}

export interface WorkflowContext {
  model: RolloutModel;
  reward: RewardFn;
  runId: string;
  /** Samples per task (the GRPO group size). */
  repeatTimes: number;
  sampling: WorkflowSampling;
  /** Explore step, part of the group id so groups of different steps never mix. */
  step: number;
  seed: number;
  split: 'train' | 'eval';
  signal?: AbortSignal;
  /** Multi-turn workflows: most model turns per episode. */
  maxTurns?: number;
  /**
   * Partial rollouts (single_turn): new tokens per sample in this step; a sample cut there is returned
   * with status `partial` and no reward (explorer/partial.ts continues it in a later step).
   */
  partialBudget?: number;
}

export interface Workflow {
  readonly name: string;
  run(tasks: Task[], ctx: WorkflowContext): Promise<Experience[]>;
}

let counter = 0;
/** Unique, sortable experience ids (time, process, counter). */
export function newExperienceId(): string {
  counter = (counter + 1) % 1_000_000;
  return `${Date.now().toString(36)}-${process.pid.toString(36)}-${counter.toString(36).padStart(4, '0')}`;
}
