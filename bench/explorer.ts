// `npm run bench -- explorer`: rollout throughput of the single_turn workflow (generation + reward)
// with 1, 2 and 4 rollout worker threads, experiences/s and tokens/s; baseline = 1 worker. The
// in-process rollout (no workers) is reported too, for reference. Model: tiny-0.4m, untrained, so
// every sample runs to max_new_tokens (a fixed amount of work per experience).
import { initEngine } from '../backend/model/engine.js';
import { presetConfig } from '../backend/model/config.js';
import { Transformer } from '../backend/model/transformer.js';
import { CharTokenizer } from '../backend/model/tokenizer/index.js';
import { LocalRolloutModel } from '../backend/explorer/local-model.js';
import { WorkerRolloutModel } from '../backend/explorer/workers/pool.js';
import { workflowSampling, type RolloutModel } from '../backend/explorer/workflow.js';
import { workflows } from '../backend/explorer/workflows/index.js';
import { rewardFns } from '../backend/explorer/rewards/index.js';
import { builtinTasksets } from '../backend/explorer/tasksets/index.js';
import { median, report } from './report.js';

const STEPS = Number(process.env.BENCH_REPS ?? 3);
const TASKS = 8;
const REPEAT = 4;
const MAX_NEW = 24;

await initEngine();
const gen = builtinTasksets.get('reverse');
const tasks = gen.generate(TASKS * (STEPS + 1), 0, 'train');
const tok = CharTokenizer.train(tasks.flatMap((t) => [t.prompt ?? '', gen.solve(t)]));
const cfg = presetConfig('tiny-0.4m', tok.vocabSize);
const model = new Transformer(cfg, 0);
const wf = workflows.get('single_turn');
const reward = rewardFns.get(gen.reward);

async function measure(m: RolloutModel): Promise<{ eps: number; tps: number }> {
  const eps: number[] = [];
  const tps: number[] = [];
  for (let s = 0; s <= STEPS; s++) {
    const t0 = performance.now();
    const exps = await wf.run(tasks.slice(s * TASKS, (s + 1) * TASKS), {
      model: m,
      reward,
      runId: 'bench',
      repeatTimes: REPEAT,
      step: s,
      seed: s,
      split: 'train',
      sampling: workflowSampling({ maxNewTokens: MAX_NEW, temperature: 1, topK: 0, topP: 1 }, m.tokenizer),
    });
    const dt = (performance.now() - t0) / 1000;
    if (exps.some((e) => e.status === 'infra_failure')) throw new Error('bench: rollout failures');
    if (s === 0) continue; // warm-up (kernels, first weights)
    eps.push(exps.length / dt);
    tps.push(exps.reduce((a, e) => a + e.responseTokens.length, 0) / dt);
  }
  return { eps: median(eps), tps: median(tps) };
}

const inproc = await measure(new LocalRolloutModel(model, tok, 0));
let base: { eps: number; tps: number } | undefined;
for (const n of [1, 2, 4]) {
  const pool = new WorkerRolloutModel({ workers: n, config: cfg, tokenizer: tok });
  try {
    await pool.ready();
    await pool.setWeights(model, 0);
    const r = await measure(pool);
    base ??= r;
    const m = pool.metrics();
    const extra = {
      workers: n,
      cores: (await import('node:os')).availableParallelism(),
      queue_wait_s: m.queue_wait_s,
      generate_s: m.generate_s,
      weight_sync_s: m.weight_sync_s,
      weight_load_s: m.weight_load_s,
      wall_s: m.wall_s,
    };
    report({
      bench: 'explorer',
      figure: `experiences_per_s_${n}w`,
      unit: 'experiences/s',
      value: r.eps,
      baseline: 'experiences_per_s_1w',
      baseline_value: base.eps,
      ...extra,
    });
    report({
      bench: 'explorer',
      figure: `tokens_per_s_${n}w`,
      unit: 'tokens/s',
      value: r.tps,
      baseline: 'tokens_per_s_1w',
      baseline_value: base.tps,
      ...extra,
    });
  } finally {
    await pool.close();
  }
}
report({
  bench: 'explorer',
  figure: 'experiences_per_s_in_process',
  unit: 'experiences/s',
  value: inproc.eps,
  baseline: 'experiences_per_s_1w',
  baseline_value: base!.eps,
});
report({
  bench: 'explorer',
  figure: 'tokens_per_s_in_process',
  unit: 'tokens/s',
  value: inproc.tps,
  baseline: 'tokens_per_s_1w',
  baseline_value: base!.tps,
});
model.dispose();
