// Run setup, the explorer's parts: the experience pipeline and what a step's raw experiences go
// through, the rollout engine, sampling, explorer and eval settings, the same in every placement.
// Nothing in setup/ imports run.ts or a placement.
import type { RunConfig } from '../../core/config.js';
import type { Experience } from '../../core/types.js';
import { InputError } from '../../core/errors.js';
import type { Transformer } from '../../model/transformer.js';
import type { Tokenizer } from '../../model/tokenizer/index.js';
import { ExperiencePipeline } from '../../buffer/pipeline/experience/index.js';
import type { Workflow } from '../../explorer/workflow.js';
import { workflows } from '../../explorer/workflows/index.js';
import { makeRolloutEngine, type SyncedRolloutModel } from '../../explorer/rollout-engine.js';
import { groupAdvantages, pipelineComputesAdvantages } from '../../trainer/resolve-algorithm.js';
import { samplerStaleness } from '../sync-plan.js';
import type { TaskFeed } from './tasks.js';

/** Invalid experiences are kept in the buffer (browsable, never sampled) rather than dropped. */
export const RUN_EXPERIENCE_PIPELINE = [
  { name: 'validity' },
  { name: 'reward_filter', drop_invalid: false },
  { name: 'advantage' },
];

/** Raw -> verified experiences as configured; `algorithm()` is the stage being run (its advantages). */
export function experiencePipeline(
  cfg: RunConfig,
  algorithm: () => { name: string; params: Record<string, unknown> },
): ExperiencePipeline {
  try {
    return ExperiencePipeline.fromConfig(cfg.experience_pipeline ?? RUN_EXPERIENCE_PIPELINE, {
      advantage: (exps) => {
        const a = algorithm();
        if (!pipelineComputesAdvantages(a.name, a.params)) return false;
        groupAdvantages(a.name, exps, a.params);
        return true;
      },
    });
  } catch (e) {
    throw new InputError((e as Error).message, { field: 'experience_pipeline' });
  }
}

/** What the explorer does with a step's raw experiences in every placement: pipeline, then the feed learns. */
export function processExperiences(
  pipeline: ExperiencePipeline,
  feed: TaskFeed | undefined,
  onCounts?: (c: Record<string, number>) => void,
): (exps: Experience[]) => Experience[] {
  return (raw) => {
    const r = pipeline.run(raw);
    onCounts?.(r.counts);
    // Outcomes of the raw rollouts (a filter that drops a group does not hide how hard the task was).
    feed?.observe(raw);
    return r.experiences;
  };
}

/** Held-out evaluation settings (greedy; eval_sampling.max_new_tokens and the workflow) of every placement. */
export function evalOptions(cfg: RunConfig): { maxNewTokens: number; workflow: Workflow } {
  return { maxNewTokens: cfg.explorer.eval_sampling.max_new_tokens, workflow: workflows.get(cfg.workflow.name) };
}

/**
 * The synced rollout model of every placement (`explorer.engine`, `explorer.workers`): llama.cpp
 * on a GGUF of each version, native worker threads, or undefined where the policy samples in place.
 * `disposeReplaced`: the caller hands over each loaded model (an explorer process).
 */
export function rolloutEngine(
  cfg: RunConfig,
  modelCfg: Transformer['config'],
  tok: Tokenizer,
  opts: { disposeReplaced?: boolean; overlap?: boolean } = {},
): SyncedRolloutModel | undefined {
  return makeRolloutEngine({
    engine: cfg.explorer.engine,
    workers: cfg.explorer.workers,
    llamaGpu: cfg.explorer.llama_cpp_gpu,
    config: modelCfg,
    tokenizer: tok,
    ...opts,
  });
}

/** The rollouts' sampling settings (explorer.sampling), as every placement's explorer passes them. */
export function rolloutSampling(cfg: RunConfig) {
  const s = cfg.explorer.sampling;
  return { maxNewTokens: s.max_new_tokens, temperature: s.temperature, topK: s.top_k, topP: s.top_p };
}

/** Explorer options shared by every placement. */
export function explorerOptions(cfg: RunConfig, runId: string, seed: number) {
  return {
    runId,
    tasksPerStep: cfg.explorer.tasks_per_step,
    repeatTimes: cfg.explorer.repeat_times,
    sampling: rolloutSampling(cfg),
    seed,
    ...(cfg.explorer.partial_rollout
      ? {
          partial: {
            maxTokensPerStep: cfg.explorer.partial_rollout.max_tokens_per_step,
            maxStaleness: samplerStaleness(cfg),
          },
        }
      : {}),
  };
}
