// A tiny two-stage config (SFT warm-up, then MIX) for process-model tests: runs in seconds.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { validateRunConfig, type RunConfig } from '../../backend/core/config.js';

export function tinyConfig(
  sync: { sync_offset: number; sync_interval?: number },
  mixSteps = 6,
  extra: Record<string, unknown> = {},
): RunConfig {
  const raw = {
    name: 'tiny',
    seed: 1,
    model: { size: 'tiny-0.4m', max_seq_len: 32 },
    tokenizer: { kind: 'char' },
    taskset: { builtin: 'reverse', size: 50 },
    eval: { builtin: 'reverse', size: 8, split: 'eval' },
    experts: { builtin: 'reverse', size: 8, seed: 99 },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    explorer: {
      tasks_per_step: 2,
      repeat_times: 2,
      sampling: { max_new_tokens: 4 },
      eval_sampling: { max_new_tokens: 4 },
    },
    trainer: { batch_size: 8 },
    buffer: { storage: 'sqlite', max_staleness: sync.sync_offset + (sync.sync_interval ?? 1) - 1 },
    placement: 'checkpoint',
    synchronizer: { sync_interval: sync.sync_interval ?? 1, sync_offset: sync.sync_offset },
    stages: [
      { name: 'warmup', algorithm: { name: 'sft' }, steps: 2, batch_size: 8 },
      { name: 'mix', algorithm: { name: 'mix', params: { expert_ratio: 0.5 } }, steps: mixSteps },
    ],
    ...extra,
  };
  const { config, issues } = validateRunConfig(raw);
  if (!config) throw new Error(JSON.stringify(issues));
  return config;
}

export function tempWorkspace(): string {
  return mkdtempSync(join(tmpdir(), 'rft-proc-'));
}

export function writeConfig(dir: string, cfg: RunConfig): string {
  const f = join(dir, 'tiny.yaml');
  writeFileSync(f, stringify(cfg));
  return f;
}
