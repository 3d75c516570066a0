// `npm run bench -- rl-reference`: GRPO of this project beside a PyTorch reference computed the way
// TRL's GRPOTrainer computes it (bench/torch_grpo.py), on the same imported Hugging Face folder, taskset,
// sampling settings, samples per step, lr and optimizer, in one invocation on this machine with the
// same thread count. This project runs through its real run path (a config with model.checkpoint =
// the folder, algorithm grpo, placement memory, runJob in-process); the reference in Debian's
// python3-torch. Prints held-out greedy accuracy against samples seen for both at the same steps
// (every BENCH_EVAL_EVERY steps) and the training wall-clock (sampling + update, evals left out) of
// each, then one JSON figure per model: sample efficiency (the worst ratio of this project's accuracy
// gain over the reference's at a checkpoint) and wall-clock to the reference's final accuracy.
//   BENCH_MODELS   comma list of rl-reference-models.ts names (default: last-h64, copy-h128)
//   BENCH_STEPS (30), BENCH_EVAL_EVERY (5), BENCH_TASKS (8 tasks per step), BENCH_REPEAT (8 samples each),
//   BENCH_THREADS (1), BENCH_LR (fixed lr, both sides), BENCH_SEEDS (5: seeds 1..N on both sides, curves averaged; 6-9 minutes for the two default models here), BENCH_BETA (0.001: the reference's k3 coefficient),
//   BENCH_KEEP=1 keeps the folders (models, task files, runs, the reference's input) and names them
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initEngine } from '../backend/model/engine.js';
import { loadRunConfig } from '../backend/coordinator/load-config.js';
import { runJob } from '../backend/coordinator/run.js';
import { encodePrompt, stopTokens, taskMessages } from '../backend/model/chat.js';
import { loadTokenizer } from '../backend/model/tokenizer/io.js';
import { referenceModels, type ReferenceModel } from './rl-reference-models.js';
import { report } from './report.js';
import { runTorch, torchBlasFamily } from './torch.js';

const env = (k: string, d: number) => (process.env[k] !== undefined ? Number(process.env[k]) : d);
const STEPS = env('BENCH_STEPS', 30);
const EVERY = env('BENCH_EVAL_EVERY', 5);
const TASKS = env('BENCH_TASKS', 8);
const REPEAT = env('BENCH_REPEAT', 8);
const SEEDS = env('BENCH_SEEDS', 5);
const BETA = env('BENCH_BETA', 0.001);
// One thread count for both sides (BENCH_THREADS, default 1): the engine's OpenBLAS reads it when the
// addon loads, torch sets it. On this loaded 2-core machine torch at 2 threads ran 25x slower than at 1.
const THREADS = env('BENCH_THREADS', 1);
process.env.OPENBLAS_NUM_THREADS = String(THREADS);

interface Point {
  step: number;
  samples: number;
  accuracy: number;
  wall_s: number;
}

await initEngine();
const root = mkdtempSync(join(tmpdir(), 'rft-bench-rl-reference-'));

/** This project: a run config written as a user would, run in-process; its eval records as a curve. */
async function ours(
  m: ReferenceModel,
  lr: number,
  seed: number,
  dir: string,
): Promise<{ curve: Point[]; time_s: Record<string, number> }> {
  mkdirSync(dir, { recursive: true });
  const cfgPath = join(dir, 'run.rft.yaml');
  writeFileSync(
    cfgPath,
    `name: ref-${m.name}\nseed: ${seed}\nmodel:\n  checkpoint: ${JSON.stringify(m.dir)}\n` +
      `taskset:\n  path: ${JSON.stringify(m.files.train)}\neval:\n  path: ${JSON.stringify(m.files.eval)}\n` +
      `workflow: { name: single_turn, reward: exact_match }\nalgorithm: { name: grpo }\n` +
      `explorer:\n  tasks_per_step: ${TASKS}\n  repeat_times: ${REPEAT}\n` +
      `  sampling: { max_new_tokens: ${m.maxNewTokens}, temperature: 1, top_p: 1 }\n  eval_sampling: { max_new_tokens: ${m.maxNewTokens} }\n` +
      `trainer:\n  batch_size: ${TASKS * REPEAT}\n  steps: ${STEPS}\n  lr: ${lr}\n  warmup_steps: 0\n  grad_clip: 1\n  lr_decay: constant\n` +
      `placement: memory\nmonitor: { eval_every: ${EVERY}, report: false, tensorboard: false }\n`,
  );
  const s = await runJob({
    config: loadRunConfig(cfgPath),
    configPath: cfgPath,
    workspace: dir,
    runId: `ref-${m.name}`,
  });
  const recs = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  const sum = (kind: string, k: string) =>
    Math.round(1000 * recs.filter((r) => r.kind === kind).reduce((a, r) => a + Number(r[k] ?? 0), 0)) / 1000;
  return {
    curve: curveOf(recs, s.base_accuracy ?? NaN),
    time_s: { rollout: sum('explore', 'rollout_s'), train: sum('train', 'time_total_s') },
  };
}

/**
 * Wall-clock from the end of the starting eval to each eval record (sampling, updates and the held-out
 * evals on the way, as the reference counts it: both evaluate the same tasks greedily).
 */
function curveOf(recs: Record<string, unknown>[], base: number): Point[] {
  const evals = recs.filter((r) => r.kind === 'eval');
  const start = Number(evals[0]!.t);
  const out: Point[] = [{ step: 0, samples: 0, accuracy: base, wall_s: 0 }];
  for (const e of evals.slice(1)) {
    const step = Number(e.step);
    if (out.some((p) => p.step === step)) continue; // the final eval repeats the last step's
    const wall_s = Math.round(Number(e.t) - start) / 1000;
    out.push({ step, samples: step * TASKS * REPEAT, accuracy: Number(e.accuracy), wall_s });
  }
  return out;
}

/** The reference: the same folder, prompts (as this project's tokenizer encodes them), reward and settings. */
function reference(
  m: ReferenceModel,
  lr: number,
  seed: number,
): { curve: Point[]; torch: string; time_s: Record<string, number> } | string {
  const tok = loadTokenizer(m.dir);
  const line = (t: { prompt: string; answer: string }) => ({
    prompt: encodePrompt(tok, taskMessages(t.prompt)),
    answer: t.answer,
  });
  const decode = Array.from({ length: tok.vocabSize }, (_, i) => tok.decode([i], { skipSpecial: true }));
  const file = join(root, `${m.name}-torch-${seed}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      mode: 'run',
      model: m.dir,
      threads: THREADS,
      seed,
      train: m.tasks.train.map(line),
      eval: m.tasks.eval.map(line),
      decode,
      stop: stopTokens(tok),
      sampling: { temperature: 1, top_p: 1, max_new_tokens: m.maxNewTokens },
      eval_max_new_tokens: m.maxNewTokens,
      steps: STEPS,
      eval_every: EVERY,
      tasks_per_step: TASKS,
      repeat: REPEAT,
      lr,
      // This project's trainer: AdamW (backend/model/optim.ts defaults), trainer.weight_decay 0, grad clip 1.
      beta1: 0.9,
      beta2: 0.999,
      adam_eps: 1e-8,
      weight_decay: 0,
      grad_clip: 1,
      clip_eps: 0.2,
      beta: BETA,
      adv_eps: 1e-4,
    }),
  );
  const r = runTorch<{ curve: Point[]; torch: string; time_s: Record<string, number> }>(
    fileURLToPath(new URL('./torch_grpo.py', import.meta.url)),
    {
      file,
    },
  );
  return r.result ?? r.why ?? 'no result';
}

const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : 'n/a');
/** The mean of the seeds' curves, step by step. */
const mean = (cs: Point[][]): Point[] =>
  cs[0]!.map((p, i) => ({
    step: p.step,
    samples: p.samples,
    accuracy: cs.reduce((a, c) => a + (c[i]?.accuracy ?? NaN), 0) / cs.length,
    wall_s: Math.round((1000 * cs.reduce((a, c) => a + (c[i]?.wall_s ?? NaN), 0)) / cs.length) / 1000,
  }));
const wanted = process.env.BENCH_MODELS?.split(',').map((s) => s.trim());
try {
  for (const spec of referenceModels.filter((s) => (wanted ? wanted.includes(s.name) : s.inDefault))) {
    const dir = join(root, spec.name);
    const m = await spec.build(dir);
    const lr = process.env.BENCH_LR !== undefined ? Number(process.env.BENCH_LR) : spec.lr;
    const refs: Point[][] = [];
    const mine: Point[][] = [];
    let torchVersion = '';
    // Seed by seed, the reference then this project, so both see the machine's load alike.
    for (let seed = 1; seed <= SEEDS; seed++) {
      const ref = reference(m, lr, seed);
      if (typeof ref === 'string') throw new Error(`${m.name}: reference unavailable: ${ref}`);
      torchVersion = ref.torch;
      refs.push(ref.curve);
      const o = await ours(m, lr, seed, join(dir, `run-${seed}`));
      mine.push(o.curve);
      const acc = (c: Point[]) => c.map((p) => pct(p.accuracy)).join(' ');
      console.error(
        `${m.name} seed ${seed}: reference ${acc(ref.curve)} ${JSON.stringify(ref.time_s)}; ours ${acc(o.curve)} ${JSON.stringify(o.time_s)}`,
      );
    }
    const [r, o] = [mean(refs), mean(mine)];
    console.log(
      `\n${m.name} (${m.about}): lr ${lr}, ${TASKS} tasks x ${REPEAT} samples per step, mean of ${SEEDS} seed(s), ${THREADS} thread(s)`,
    );
    console.log('| step | samples | this project acc | reference acc | this project wall s | reference wall s |');
    console.log('| --- | --- | --- | --- | --- | --- |');
    for (const p of r) {
      const q = o.find((x) => x.step === p.step);
      console.log(
        `| ${p.step} | ${p.samples} | ${pct(q?.accuracy ?? NaN)} | ${pct(p.accuracy)} | ${q?.wall_s ?? 'n/a'} | ${p.wall_s} |`,
      );
    }
    report(figures(m, lr, o, r, torchVersion));
  }
} finally {
  if (process.env.BENCH_KEEP) console.error(`kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}

/** Sample efficiency: at every checkpoint, this project's gain over the start against the reference's. */
function figures(m: ReferenceModel, lr: number, mine: Point[], theirs: Point[], torchVersion: string) {
  const base = theirs[0]!.accuracy;
  const ratios = theirs
    .slice(1)
    .map((p) => {
      const q = mine.find((x) => x.step === p.step);
      return q ? (q.accuracy - base) / Math.max(p.accuracy - base, 1e-9) : NaN;
    })
    .filter((r) => Number.isFinite(r));
  const worstAtOrAbove = theirs
    .slice(1)
    .every((p) => (mine.find((x) => x.step === p.step)?.accuracy ?? -1) >= p.accuracy);
  const target = theirs.at(-1)!.accuracy;
  const reach = (c: Point[]) => c.find((p) => p.accuracy >= target)?.wall_s ?? NaN;
  const tMine = reach(mine);
  const tRef = reach(theirs);
  return {
    bench: 'rl-reference',
    figure: `wall_to_reference_final_${m.name}`,
    unit: 's',
    value: tMine,
    baseline: 'torch-grpo (TRL GRPOTrainer computation)',
    baseline_value: tRef,
    ratio: Number.isFinite(tMine) ? tRef / tMine : null,
    curve_at_or_above_everywhere: worstAtOrAbove,
    min_gain_ratio: ratios.length ? Math.min(...ratios) : null,
    reference_final_accuracy: target,
    ours_final_accuracy: mine.at(-1)?.accuracy ?? null,
    base_accuracy_ours: mine[0]!.accuracy,
    base_accuracy_reference: base,
    lr,
    steps: STEPS,
    seeds: SEEDS,
    tasks: TASKS,
    repeat: REPEAT,
    threads: THREADS,
    torch: torchVersion,
    torch_blas_family: torchBlasFamily(),
  };
}
