// Partial rollouts (explorer.partial_rollout) on a long-output task: the main job's model after its
// SFT warm-up (it answers short and stops, mostly) rolls out with max_new_tokens 128, so a few
// samples of each step run long. Without partial rollouts every explore step lasts as long as its
// longest sample; with them no trajectory gets more than the budget per step and long ones finish
// over later steps. Figures per variant: tokens generated per explore step (max, mean) and the most
// any one trajectory got in a step against the budget, trajectories trained on that spanned more
// than one step, explore-step and trainer-step wall times. Synchronizer memory (one process).
// Usage: npm run bench -- partial-rollout [--steps N] [--budget N] [--max-new N] [--warmup N] [--seed N]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadRunConfig } from '../backend/coordinator/load-config.js';
import { runJob } from '../backend/coordinator/run.js';
import { openStore } from '../backend/buffer/storage/index.js';
import { report } from './report.js';

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
};
const steps = arg('steps', 20);
const budget = arg('budget', 16);
const maxNew = arg('max-new', 128);
const warmup = arg('warmup', 100);
const seed = arg('seed', 1);
const mainConfig = fileURLToPath(new URL('../configs/main.yaml', import.meta.url));

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const p = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))]! : 0;
};

async function one(partial: boolean) {
  const cfg = loadRunConfig(mainConfig);
  cfg.seed = seed;
  cfg.model.max_seq_len = 32 + maxNew;
  cfg.explorer.sampling.max_new_tokens = maxNew;
  if (partial) cfg.explorer.partial_rollout = { max_tokens_per_step: budget, loss_segments: 'all' };
  cfg.placement = 'memory';
  cfg.synchronizer = { ...cfg.synchronizer, sync_offset: 0, sync_interval: 1 };
  cfg.stages = [
    { ...cfg.stages![0]!, steps: warmup },
    { name: 'grpo', algorithm: { name: 'grpo', params: {} }, steps, lr: 0.001 } as NonNullable<
      typeof cfg.stages
    >[number],
  ];
  cfg.trainer.batch_size = cfg.explorer.tasks_per_step * cfg.explorer.repeat_times;
  const ws = mkdtempSync(join(tmpdir(), 'rft-partial-bench-'));
  try {
    const t0 = Date.now();
    await runJob({ config: cfg, workspace: ws, runId: 'b' });
    const wall = (Date.now() - t0) / 1000;
    const runDir = join(ws, '.rft', 'runs', 'b');
    const rec = readFileSync(join(runDir, 'metrics.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const ex = rec.filter((r) => r.kind === 'explore' && r.stage === 'grpo');
    const tr = rec.filter((r) => r.kind === 'train' && r.stage === 'grpo');
    const store = await openStore(join(runDir, 'buffer.db'));
    let trained = 0;
    let multi = 0;
    let longest = 0;
    try {
      const start = warmup;
      for (let t = start; t < start + steps; t++) {
        for (const e of await store.getMany(await store.consumed('trainer', t, 'b'))) {
          if (e.source !== 'usual') continue;
          trained++;
          if ((e.segments?.length ?? 1) > 1) multi++;
          longest = Math.max(longest, e.responseTokens.length);
        }
      }
    } finally {
      await store.close();
    }
    const tokens = ex.map((r) => Number(r.tokens));
    const rollout = ex.map((r) => Number(r.rollout_s));
    const perTraj = ex.map((r) => Number(r.max_trajectory_tokens ?? NaN)).filter(Number.isFinite);
    return {
      wall,
      exploreSteps: ex.length,
      tokensMax: Math.max(...tokens),
      tokensMean: mean(tokens),
      perTrajMax: perTraj.length ? Math.max(...perTraj) : NaN,
      exploreMean: mean(rollout),
      exploreP90: p(rollout, 0.9),
      exploreMax: Math.max(...rollout),
      trainMean: mean(tr.map((r) => Number(r.time_total_s))),
      trained,
      multi,
      longest,
      load: loadavg()[0]!,
    };
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
}

const off = await one(false);
const on = await one(true);
const base = 'without partial_rollout';
const tag = { budget, max_new_tokens: maxNew, steps, warmup, seed, load_1m: Math.round(on.load * 10) / 10 };
report({
  bench: 'partial-rollout',
  figure: 'tokens per explore step, max',
  unit: 'tokens',
  value: on.tokensMax,
  baseline: base,
  baseline_value: off.tokensMax,
  ...tag,
});
report({
  bench: 'partial-rollout',
  figure: 'tokens per explore step, mean',
  unit: 'tokens',
  value: on.tokensMean,
  baseline: base,
  baseline_value: off.tokensMean,
  ...tag,
});
report({
  bench: 'partial-rollout',
  figure: 'most tokens one trajectory got in one explore step (budget ' + budget + ')',
  unit: 'tokens',
  value: on.perTrajMax,
  baseline: base,
  baseline_value: off.longest,
  ...tag,
});
report({
  bench: 'partial-rollout',
  figure: 'explore steps run',
  unit: 'steps',
  value: on.exploreSteps,
  baseline: base,
  baseline_value: off.exploreSteps,
  ...tag,
});
report({
  bench: 'partial-rollout',
  figure: 'trained trajectories that spanned >1 explore step',
  unit: 'trajectories',
  value: on.multi,
  baseline: base,
  baseline_value: off.multi,
  of_trained: on.trained,
  ...tag,
});
report({
  bench: 'partial-rollout',
  figure: 'explore step wall time, mean',
  unit: 's',
  value: on.exploreMean,
  baseline: base,
  baseline_value: off.exploreMean,
  ...tag,
});
report({
  bench: 'partial-rollout',
  figure: 'explore step wall time, p90',
  unit: 's',
  value: on.exploreP90,
  baseline: base,
  baseline_value: off.exploreP90,
  ...tag,
});
report({
  bench: 'partial-rollout',
  figure: 'explore step wall time, max',
  unit: 's',
  value: on.exploreMax,
  baseline: base,
  baseline_value: off.exploreMax,
  ...tag,
});
report({
  bench: 'partial-rollout',
  figure: 'trainer step wall time, mean',
  unit: 's',
  value: on.trainMean,
  baseline: base,
  baseline_value: off.trainMean,
  ...tag,
});
report({
  bench: 'partial-rollout',
  figure: 'run wall time (warm-up + GRPO)',
  unit: 's',
  value: on.wall,
  baseline: base,
  baseline_value: off.wall,
  ...tag,
});
