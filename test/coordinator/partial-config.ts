// The long-output config of the partial-rollout run tests: an untrained model answers up to
// max_new_tokens, so trajectories span several explore steps at the per-step budget.
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';

export const BUDGET = 6;
export const MAX_NEW = 20;
export const STEPS = 5;

export function partialConfig(method: 'memory' | 'checkpoint', over: Record<string, unknown> = {}): RunConfig {
  const raw = {
    name: 'partial',
    seed: 3,
    model: { size: 'tiny-0.4m', max_seq_len: 64 },
    tokenizer: { kind: 'char' },
    taskset: { builtin: 'reverse', size: 40 },
    eval: { builtin: 'reverse', size: 4, split: 'eval' },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: {
      tasks_per_step: 2,
      repeat_times: 2,
      sampling: { max_new_tokens: MAX_NEW },
      eval_sampling: { max_new_tokens: 4 },
      partial_rollout: { max_tokens_per_step: BUDGET, loss_segments: 'fresh' },
    },
    trainer: { batch_size: 4 },
    buffer: { storage: 'sqlite', max_staleness: 1 },
    placement: method,
    synchronizer: { sync_interval: 1, sync_offset: method === 'memory' ? 0 : 1 },
    stages: [{ name: 'grpo', algorithm: { name: 'grpo' }, steps: STEPS }],
    ...over,
  };
  const { config, issues } = validateRunConfig(raw);
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}
