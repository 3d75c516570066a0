// A tiny, fast variant of configs/main.yaml for tests that start real runs: a 0.4M-parameter
// model, a few SFT warm-up steps on expert demonstrations, then MIX until stopped (or `mixSeconds`).
export function tinyRunConfig(opts: { warmupSteps?: number; mixSeconds?: number; name?: string } = {}): string {
  return `# tiny run for tests
name: ${opts.name ?? 'tiny'}
seed: 1
model:
  size: tiny-0.4m
  max_seq_len: 64
tokenizer:
  kind: char
taskset:
  builtin: reverse
  size: 200
eval:
  builtin: reverse
  size: 16
  split: eval
experts:
  builtin: reverse
  size: 16
  seed: 99
workflow:
  name: single_turn
  reward: exact_match
explorer:
  tasks_per_step: 4
  repeat_times: 4
  sampling:
    max_new_tokens: 8
    temperature: 1
  eval_sampling:
    max_new_tokens: 8
trainer:
  batch_size: 24
  lr: 0.001
buffer:
  storage: sqlite
  max_staleness: 1
stages:
  - name: warmup
    algorithm:
      name: sft
    steps: ${opts.warmupSteps ?? 10}
    lr: 0.003
    batch_size: 16
  - name: mix
    algorithm:
      name: mix
      params:
        mu: 0.3
        expert_ratio: 0.3333333333
    wall_seconds: ${opts.mixSeconds ?? 20}
monitor:
  eval_every: 0
`;
}
