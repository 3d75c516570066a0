// Synchronous (sync_offset 0) against one-step-off (sync_offset 1) on the main job's config with
// explorer and trainer as separate processes (synchronizer `checkpoint`): wall-clock of the MIX stage
// to the same number of trainer steps, the trainer's idle fraction, and the final held-out accuracy.
// Usage: npm run bench -- sync-offset [--mix-steps N] [--seed N]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadRunConfig } from '../backend/coordinator/load-config.js';
import { runJob } from '../backend/coordinator/run.js';
import { measured } from './report.js';

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
};
const mixSteps = arg('mix-steps', 30);
const seed = arg('seed', 1);
const mainConfig = fileURLToPath(new URL('../configs/main.yaml', import.meta.url));

interface Result {
  wall: number;
  idle: number;
  explorerIdle: number;
  acc: number;
  base: number;
  trainStep: number;
  rollout: number;
  load: number;
}

async function one(offset: number): Promise<Result> {
  const cfg = loadRunConfig(mainConfig);
  cfg.seed = seed;
  cfg.placement = 'checkpoint';
  cfg.synchronizer = { sync_interval: 1, sync_offset: offset };
  cfg.buffer.max_staleness = Math.max(cfg.buffer.max_staleness, offset);
  const last = cfg.stages![cfg.stages!.length - 1]!;
  last.steps = mixSteps;
  last.wall_seconds = undefined;
  const ws = mkdtempSync(join(tmpdir(), 'rft-sync-bench-'));
  try {
    const s = await runJob({ config: cfg, workspace: ws, runId: `offset${offset}` });
    const m = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, number | string>);
    const stageT = m.find((r) => r.kind === 'stage' && r.stage === last.name)!.t as number;
    const train = m.filter((r) => r.kind === 'train' && r.stage === last.name);
    const trainerState = m
      .filter((r) => r.kind === 'state' && r.component === 'trainer' && r.stage === last.name)
      .at(-1)!;
    const explorerState = m
      .filter((r) => r.kind === 'state' && r.component === 'explorer' && r.stage === last.name)
      .at(-1)!;
    const explore = m.filter((r) => r.kind === 'explore' && r.stage === last.name);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    if (train.length !== mixSteps) throw new Error(`expected ${mixSteps} ${last.name} steps, got ${train.length}`);
    return {
      wall: ((train.at(-1)!.t as number) - stageT) / 1000,
      idle: trainerState.trainer_idle as number,
      explorerIdle: explorerState.explorer_idle as number,
      acc: measured(s.final_accuracy),
      base: measured(s.base_accuracy),
      trainStep: mean(train.map((r) => r.time_total_s as number)),
      rollout: mean(explore.map((r) => r.rollout_s as number)),
      load: loadavg()[0]!,
    };
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
}

const sync = await one(0);
const off = await one(1);
const line = (figure: string, unit: string, value: number, baseline: number | null) =>
  console.log(
    JSON.stringify({
      bench: 'sync-offset',
      figure,
      unit,
      value: Number(value.toFixed(4)),
      baseline: baseline === null ? null : 'sync_offset 0',
      baseline_value: baseline === null ? null : Number(baseline.toFixed(4)),
      ratio: baseline ? Number((value / baseline).toFixed(3)) : null,
      mix_steps: mixSteps,
      seed,
    }),
  );
line('mix_stage_wall_s_sync_offset_0', 's', sync.wall, null);
line('mix_stage_wall_s_sync_offset_1', 's', off.wall, sync.wall);
line('trainer_idle_sync_offset_0', 'fraction', sync.idle, null);
line('trainer_idle_sync_offset_1', 'fraction', off.idle, sync.idle);
line('explorer_idle_sync_offset_0', 'fraction', sync.explorerIdle, null);
line('explorer_idle_sync_offset_1', 'fraction', off.explorerIdle, sync.explorerIdle);
line('base_accuracy', 'fraction', sync.base, null);
line('final_accuracy_sync_offset_0', 'fraction', sync.acc, null);
line('final_accuracy_sync_offset_1', 'fraction', off.acc, sync.acc);
// Why the wall-clock moves as it does: the cost of one train step and one explore step in each mode
// (overlapping processes share the cores), and the machine's 1-minute load average after each run.
line('train_step_s_sync_offset_0', 's', sync.trainStep, null);
line('train_step_s_sync_offset_1', 's', off.trainStep, sync.trainStep);
line('explore_step_s_sync_offset_0', 's', sync.rollout, null);
line('explore_step_s_sync_offset_1', 's', off.rollout, sync.rollout);
line('load_avg_1m_after_sync_offset_0', 'processes', sync.load, null);
line('load_avg_1m_after_sync_offset_1', 'processes', off.load, null);
