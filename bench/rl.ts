// `npm run bench -- rl`: one full RL iteration of the main job (configs/main.yaml: MIX, tiny-0.4m,
// 8 tasks x 8 samples, batch 96): rollout (generation + reward), experience pipeline (+ buffer
// append), buffer sample and the MIX train step. Time per iteration and the share of each part,
// with the native BLAS matmul against the plain wasm matmul (RFT_NATIVE_BLAS=0) in the same run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initEngine } from '../backend/model/engine.js';
import { nativeBlasActive, setNativeBlasEnabled } from '../backend/model/native-blas.js';
import { loadRunConfig } from '../backend/coordinator/load-config.js';
import { TaskFeed, expertExperience, loadTasks } from '../backend/coordinator/setup/tasks.js';
import { initialModel, makeTokenizer } from '../backend/coordinator/setup/model.js';
import { experiencePipeline } from '../backend/coordinator/setup/explorer.js';
import { samplerConfig, stageBatchSize, trainerOptions } from '../backend/coordinator/setup/trainer.js';
import type { ExperiencePipeline } from '../backend/buffer/pipeline/experience/index.js';
import { makeSampler } from '../backend/buffer/sampler/index.js';
import { openStore, type ExperienceStore } from '../backend/buffer/storage/index.js';
import { LocalRolloutModel } from '../backend/explorer/local-model.js';
import { workflowSampling } from '../backend/explorer/workflow.js';
import { workflows } from '../backend/explorer/workflows/index.js';
import { Trainer } from '../backend/trainer/trainer.js';
import { makeObjective } from '../backend/trainer/resolve-algorithm.js';
import { Rng } from '../backend/core/rng.js';
import type { Transformer } from '../backend/model/transformer.js';
import { median, report } from './report.js';

const REPS = Number(process.env.BENCH_REPS ?? 3);
const PARTS = ['rollout', 'pipeline', 'sample', 'train'] as const;
type Part = (typeof PARTS)[number];

const engine = await initEngine();
const cfg = loadRunConfig(fileURLToPath(new URL('../configs/main.yaml', import.meta.url)));
const stage = cfg.stages?.find((s) => s.algorithm.name === 'mix') ?? {
  algorithm: cfg.algorithm,
  batch_size: undefined,
  lr: undefined,
};
const pools = await loadTasks(cfg);
const tok = makeTokenizer(
  cfg,
  [...pools.train, ...pools.eval].flatMap((t) => [t.prompt ?? '', pools.solve(t)]),
);
const wf = workflows.get(cfg.workflow.name);
const sampling = {
  maxNewTokens: cfg.explorer.sampling.max_new_tokens,
  temperature: cfg.explorer.sampling.temperature,
  topK: cfg.explorer.sampling.top_k,
  topP: cfg.explorer.sampling.top_p,
};

/** One independent copy of the job's state (model, trainer, buffer) per matmul setting. */
interface Job {
  model: Transformer;
  reference?: Transformer;
  trainer: Trainer;
  store: ExperienceStore;
  rollout: LocalRolloutModel;
  tasks: TaskFeed;
  pipeline: ExperiencePipeline;
  sample: (batchSize: number, version: number, step: number) => ReturnType<ReturnType<typeof makeSampler>['sample']>;
  batchSize: number;
  samplerCfg: ReturnType<typeof samplerConfig>;
  version: number;
  rng: Rng;
  times: Record<Part, number[]>;
}

const dir = mkdtempSync(join(tmpdir(), 'rft-bench-rl-'));
async function makeJob(name: string): Promise<Job> {
  const runId = `bench-${name}`;
  const store = await openStore(join(dir, `${name}.sqlite`));
  await store.putTasks(runId, pools.train);
  await store.appendExperiences(pools.experts.map((t) => expertExperience(tok, runId, t, pools.solve(t))));
  const model = initialModel(cfg, tok);
  const objective = makeObjective(stage.algorithm.name, stage.algorithm.params);
  const reference = objective.needsReference ? model.clone() : undefined;
  const trainer = new Trainer(model, objective, trainerOptions(cfg, stage, tok.padId), reference);
  const sCfg = samplerConfig(stage.algorithm.name, stage.algorithm.params, cfg);
  const sampler = makeSampler(store, sCfg);
  const perExplore = cfg.explorer.tasks_per_step * cfg.explorer.repeat_times;
  return {
    model,
    reference,
    trainer,
    store,
    rollout: new LocalRolloutModel(model, tok, 0),
    tasks: new TaskFeed(cfg, pools.train),
    pipeline: experiencePipeline(cfg, () => stage.algorithm),
    sample: (batchSize, version, step) =>
      sampler.sample({ batchSize, currentVersion: version, step, timeoutMs: 60_000 }),
    batchSize: await stageBatchSize(store, sCfg, true, stage.batch_size ?? cfg.trainer.batch_size, perExplore),
    samplerCfg: sCfg,
    version: 0,
    rng: new Rng(cfg.seed + 1),
    times: { rollout: [], pipeline: [], sample: [], train: [] },
  };
}

async function iteration(job: Job, step: number, record: boolean): Promise<void> {
  const t: Partial<Record<Part, number>> = {};
  let t0 = performance.now();
  const raw = await wf.run(job.tasks.next(cfg.explorer.tasks_per_step), {
    model: job.rollout,
    reward: pools.reward,
    runId: 'bench',
    repeatTimes: cfg.explorer.repeat_times,
    sampling: workflowSampling(sampling, job.rollout.tokenizer),
    step,
    seed: job.rng.int(0, 2 ** 31),
    split: 'train',
  });
  if (raw.some((e) => e.status === 'infra_failure')) throw new Error('bench rl: rollout failures');
  t.rollout = performance.now() - t0;
  t0 = performance.now();
  const verified = job.pipeline.run(raw).experiences;
  await job.store.appendExperiences(verified);
  t.pipeline = performance.now() - t0;
  t0 = performance.now();
  const trainable = verified.filter((e) => e.status === 'ok' && e.source === 'usual').length;
  // As the runner does: the usual part of the batch is what this step made trainable.
  const batch = await job.sample(
    await stageBatchSize(job.store, job.samplerCfg, true, job.batchSize, trainable),
    job.version,
    step,
  );
  t.sample = performance.now() - t0;
  t0 = performance.now();
  await job.trainer.trainStep(batch.experiences, job.version);
  t.train = performance.now() - t0;
  job.version++;
  job.rollout.version = job.version;
  if (record) for (const p of PARTS) job.times[p].push(t[p]!);
}

const native = nativeBlasActive();
const modes: { name: string; native: boolean }[] = [{ name: 'wasm', native: false }];
if (native) modes.push({ name: 'native', native: true });
else
  console.error(
    `native BLAS not active (${engine.matmul?.detail ?? engine.backend}): only the wasm figures are printed`,
  );
const jobs = new Map<string, Job>();
for (const m of modes) jobs.set(m.name, await makeJob(m.name));
try {
  // Iterations alternate between the settings so both see the same machine load.
  for (let i = 0; i < 1 + REPS; i++) {
    for (const m of modes) {
      setNativeBlasEnabled(m.native);
      await iteration(jobs.get(m.name)!, i, i >= 1);
    }
  }
} finally {
  setNativeBlasEnabled(native);
}

const totals = new Map<string, number>();
for (const m of modes) {
  const j = jobs.get(m.name)!;
  const parts = Object.fromEntries(PARTS.map((p) => [p, median(j.times[p]) / 1000])) as Record<Part, number>;
  const total = PARTS.reduce((s, p) => s + parts[p], 0);
  totals.set(m.name, total);
  const base = totals.get('wasm')!;
  report({
    bench: 'rl',
    figure: `iteration_${m.name}`,
    unit: 's',
    value: total,
    baseline: m.name === 'wasm' ? null : 'iteration_wasm',
    baseline_value: m.name === 'wasm' ? null : base,
    // For a time, the speed-up is baseline / value.
    ratio: m.name === 'wasm' ? null : base / total,
    config: 'configs/main.yaml (mix stage)',
    model: cfg.model.size,
    tasks: cfg.explorer.tasks_per_step,
    repeat: cfg.explorer.repeat_times,
    batch: j.batchSize,
    ...Object.fromEntries(PARTS.map((p) => [`${p}_s`, Math.round(parts[p] * 10000) / 10000])),
    ...Object.fromEntries(PARTS.map((p) => [`${p}_share`, Math.round((parts[p] / total) * 1000) / 1000])),
  });
}
for (const j of jobs.values()) {
  j.trainer.dispose();
  j.reference?.dispose();
  j.model.dispose();
  await j.store.close();
}
rmSync(dir, { recursive: true, force: true });
