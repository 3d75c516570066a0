// `npm run bench -- main-job [--config FILE] [--budget S] [--seeds 1,2] [--variants sft,grpo,mix]`:
// the main job's comparison. One SFT warm-up (the config's first stage) makes the base checkpoint;
// then each variant trains from that same checkpoint with the same seed and the same wall-clock
// budget, and is evaluated on the held-out split: SFT only (expert demonstrations), GRPO only
// (the explorer's own rollouts) and MIX (both; the config's last stage). One JSON line per figure;
// the baseline of each variant is the base accuracy (ratio = variant / base).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunConfig } from '../backend/core/config.js';
import { loadRunConfig } from '../backend/coordinator/load-config.js';
import { runJob } from '../backend/coordinator/run.js';
import { measured, report } from './report.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: string) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : dflt;
};
const file = opt('config', 'configs/main.yaml');
const base = loadRunConfig(file);
const stages = base.stages ?? [];
if (stages.length < 2) throw new Error(`${file}: the comparison needs a warm-up stage and a compared stage`);
const warm = stages[0]!;
const compared = stages[stages.length - 1]!;
const budget = Number(opt('budget', String(compared.wall_seconds ?? 120)));
const seeds = opt('seeds', String(base.seed)).split(',').map(Number);
const variants = opt('variants', 'sft,grpo,mix').split(',');
const ws = mkdtempSync(join(tmpdir(), 'rft-main-job-'));

// GRPO only: the compared stage's algorithm parameters that are not about expert data.
const { mu: _mu, expert_ratio: _er, ...rlParams } = compared.algorithm.params ?? {};
const algorithmOf: Record<string, RunConfig['algorithm']> = {
  sft: { name: 'sft', params: {} },
  grpo: { name: 'grpo', params: rlParams },
  mix: compared.algorithm,
};

for (const seed of seeds) {
  const warmCfg: RunConfig = { ...base, seed, stages: [warm] };
  // --warm DIR reuses a warm-up checkpoint (exploring settings of the compared stage).
  const reuse = opt('warm', '');
  const w = reuse
    ? { checkpoint: reuse, final_accuracy: Number(opt('base', 'NaN')), trainer_steps: 0 }
    : await runJob({ config: warmCfg, workspace: ws, runId: `warmup-s${seed}` });
  const baseAcc = measured(w.final_accuracy);
  console.error(
    `seed ${seed}: base accuracy ${w.final_accuracy} after ${w.trainer_steps} warm-up steps (${w.checkpoint})`,
  );
  report({
    bench: 'main-job',
    figure: 'accuracy_base',
    unit: 'accuracy',
    value: baseAcc,
    seed,
    steps: w.trainer_steps,
  });
  for (const v of variants) {
    const algorithm = algorithmOf[v];
    if (!algorithm) throw new Error(`unknown variant '${v}' (sft, grpo, mix)`);
    const cfg: RunConfig = {
      ...base,
      seed,
      model: { ...base.model, checkpoint: w.checkpoint },
      algorithm,
      stages: [{ ...compared, name: v, algorithm, steps: undefined, wall_seconds: budget }],
    };
    const s = await runJob({ config: cfg, workspace: ws, runId: `${v}-s${seed}` });
    const acc = measured(s.final_accuracy);
    console.error(
      `seed ${seed}: ${v} accuracy ${s.final_accuracy} after ${s.trainer_steps} steps in ${budget} s (${s.report})`,
    );
    report({
      bench: 'main-job',
      figure: `accuracy_${v}`,
      unit: 'accuracy',
      value: acc,
      baseline: 'base (after the warm-up)',
      baseline_value: baseAcc,
      ratio: null,
      gain_points: Math.round((acc - baseAcc) * 1000) / 10,
      seed,
      budget_s: budget,
      steps: s.trainer_steps,
      report: s.report,
    });
  }
}
