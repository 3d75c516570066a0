// RFT-core: `runJob` is the entry of every run (registry record, pid file, final status). It hands
// the run to processes-run.ts (synchronizer `checkpoint`, the default: explorer and trainer as their
// own processes) or explore-bench.ts (modes explore, bench), or runs it here in one process with the
// model shared in memory (synchronizer `memory`): the stages of a config (e.g. SFT warm-up, then
// MIX), evaluation on the held-out split, metrics, checkpoints and the HTML report.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { validateRunConfig, type RunConfig } from '../core/config.js';
import type { Experience, Task } from '../core/types.js';
import { logger } from '../core/log.js';
import { Rng } from '../core/rng.js';
import { InputError } from '../core/errors.js';
import { initEngine } from '../model/engine.js';
import { presetConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import { loadCheckpoint, saveCheckpoint, type CheckpointMeta } from '../model/checkpoint.js';
import { withLora } from '../model/lora.js';
import { encodePrompt, encodeResponse, taskMessages } from '../model/chat.js';
import { CharTokenizer, loadTokenizer, trainTokenizer, saveTokenizer, type Tokenizer } from '../model/tokenizer/index.js';
import { openStore, type ExperienceStore } from '../buffer/storage/index.js';
import { RunRegistry } from '../buffer/runs.js';
import { ExperiencePipeline } from '../buffer/pipeline/experience/index.js';
import { makeSampler, type Sampler } from '../buffer/sampler/index.js';
import { Explorer } from '../explorer/explorer.js';
import { LocalRolloutModel } from '../explorer/local-model.js';
import { WorkerRolloutModel } from '../explorer/workers/pool.js';
import { workflows, newExperienceId, type RewardFn } from '../explorer/workflow.js';
import '../explorer/workflows/index.js';
import { resolveReward } from '../explorer/reward-resolve.js';
import { builtinTasksets } from '../explorer/tasksets/index.js';
import { Trainer, type TrainerOptions } from '../trainer/trainer.js';
import { stageProgress } from '../trainer/worker.js';
import { makeObjective, groupAdvantages } from '../trainer/objectives.js';
import { evaluate, type EvalResult } from './evaluate.js';
import { checkModelTakesImages, runVisionConfig } from './model-vision.js';
import { MetricsLog, Progress, writeReport } from './monitor.js';
import { executeProcesses } from './processes-run.js';
import { executeWithoutTrainer } from './explore-bench.js';

const log = logger('coordinator');

export interface RunOptions {
  /** Required for a new run; a resumed run reads its config from the run registry. */
  config?: RunConfig;
  /** Continue this run from its last checkpoint and buffer position. */
  resume?: string;
  configPath?: string;
  /** Trainer steps between checkpoints (resume points). */
  checkpointEvery?: number;
  /** Folder that holds `.rft/runs/<id>/`. */
  workspace: string;
  runId?: string;
  /** Print a progress line on stderr. */
  progress?: boolean;
  signal?: AbortSignal;
}

export interface RunSummary {
  run_id: string;
  run_dir: string;
  base_accuracy: number;
  final_accuracy: number;
  evals: { stage: string; step: number; accuracy: number; mean_reward: number }[];
  trainer_steps: number;
  explore_steps: number;
  wall_seconds: number;
  report: string;
  checkpoint: string;
}

export interface TaskPools {
  train: Task[];
  eval: Task[];
  experts: Task[];
  reward: RewardFn;
  solve: (t: Task) => string;
}

export function loadTasks(cfg: RunConfig): TaskPools {
  if (!cfg.taskset.builtin) throw new Error('taskset: only built-in tasksets are wired into runs so far (taskset.builtin)');
  const gen = builtinTasksets.get(cfg.taskset.builtin);
  const train = gen.generate(cfg.taskset.size, cfg.taskset.seed, 'train');
  const ev = cfg.eval ? builtinTasksets.get(cfg.eval.builtin ?? gen.name).generate(cfg.eval.size, cfg.eval.seed, 'eval') : gen.generate(200, cfg.taskset.seed, 'eval');
  const experts = cfg.experts ? builtinTasksets.get(cfg.experts.builtin ?? gen.name).generate(cfg.experts.size, cfg.experts.seed, 'train') : [];
  return { train, eval: ev, experts, reward: resolveReward(cfg.workflow.reward), solve: gen.solve };
}

export function makeTokenizer(cfg: RunConfig, texts: string[]): Tokenizer {
  if (cfg.tokenizer.path) return loadTokenizer(cfg.tokenizer.path);
  // A run that starts from a checkpoint speaks its tokenizer (the ids must mean what they meant).
  if (cfg.model.checkpoint && existsSync(join(cfg.model.checkpoint, 'tokenizer.json'))) return loadTokenizer(cfg.model.checkpoint);
  if (cfg.tokenizer.kind === 'char') return CharTokenizer.train(texts);
  return trainTokenizer('bpe', texts, { vocabSize: cfg.tokenizer.vocab_size });
}

/**
 * The weights a new run starts from: `model.checkpoint` when set (checked against the tokenizer),
 * else a fresh model of `model.size` initialised from the seed. `tasks` (the run's train and eval
 * tasks) size the vision input of workflow `vision` runs.
 */
export function initialModel(cfg: RunConfig, tok: Tokenizer, tasks: Task[] = []): Transformer {
  if (!cfg.model.checkpoint) {
    const vision = runVisionConfig(cfg, tasks);
    return withLora(new Transformer(presetConfig(cfg.model.size, tok.vocabSize, { ...(cfg.model.max_seq_len ? { maxSeqLen: cfg.model.max_seq_len } : {}), ...(vision ? { vision } : {}) }), cfg.seed), cfg.model.lora, cfg.seed);
  }
  const dir = cfg.model.checkpoint;
  if (!existsSync(join(dir, 'config.json'))) throw new InputError(`no checkpoint at '${dir}' (config.json missing)`, { field: 'model.checkpoint' });
  let model: Transformer;
  try {
    model = loadCheckpoint(dir).model;
  } catch (e) {
    throw new InputError(`checkpoint '${dir}' cannot be loaded: ${(e as Error).message}`, { field: 'model.checkpoint' });
  }
  if (model.config.vocabSize < tok.vocabSize) {
    model.dispose();
    throw new InputError(`checkpoint '${dir}' has a vocabulary of ${model.config.vocabSize}, the tokenizer ${tok.vocabSize}: give the checkpoint's tokenizer (tokenizer.path)`, { field: 'model.checkpoint' });
  }
  try {
    checkModelTakesImages(cfg, model.config, tasks, `checkpoint '${dir}'`);
    return withLora(model, cfg.model.lora, cfg.seed);
  } catch (e) {
    model.dispose();
    throw e;
  }
}

/** Tasks in a seeded shuffled order, reshuffled each epoch. */
export class ShuffledTasks {
  private order: Task[] = [];
  private rng: Rng;
  constructor(
    private readonly tasks: Task[],
    seed: number,
  ) {
    this.rng = new Rng(seed);
  }
  next(n: number): Task[] {
    const out: Task[] = [];
    while (out.length < n) {
      if (this.order.length === 0) this.order = this.rng.shuffle([...this.tasks]);
      out.push(this.order.pop()!);
    }
    return out;
  }
}

export function expertExperience(tok: Tokenizer, runId: string, t: Task, response: string): Experience {
  const prompt = encodePrompt(tok, t.messages ?? taskMessages(t.prompt ?? ''));
  const resp = encodeResponse(tok, response);
  return {
    id: newExperienceId(),
    taskId: t.id,
    groupId: `${runId}:expert:${t.id}`,
    runId,
    source: 'expert',
    promptTokens: prompt,
    promptText: t.prompt ?? '',
    responseTokens: resp,
    responseText: response,
    actionMask: resp.map(() => 1),
    logprobs: [],
    modelVersion: -1,
    reward: 1,
    status: 'ok',
    useCount: 0,
    createdAt: Date.now(),
    split: 'train',
    // Vision tasks: the trainer rebuilds the image prefix from here, as for explored experiences.
    ...(t.image ? { metadata: { image: t.image } } : {}),
  };
}

/** A run ended by its signal: paused (`rft pause`, abort reason 'pause') or stopped. */
function endedStatus(signal: AbortSignal): 'paused' | 'stopped' {
  return signal.reason === 'pause' ? 'paused' : 'stopped';
}

export async function runJob(opts: RunOptions): Promise<RunSummary> {
  const t0 = Date.now();
  await initEngine();
  const registry = await RunRegistry.open(opts.workspace);
  let record;
  let resumeFrom: { dir: string; meta: CheckpointMeta } | undefined;
  if (opts.resume) {
    record = await registry.get(opts.resume);
    if (!record) throw new Error(`no run '${opts.resume}' in ${registry.file}`);
    const parsed = validateRunConfig(record.config);
    if (!parsed.config) throw new Error(`run '${opts.resume}': stored config is invalid: ${parsed.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
    opts = { ...opts, config: parsed.config };
    const last = await registry.latestCheckpoint(record.id);
    if (last) resumeFrom = { dir: last.path, meta: JSON.parse(readFileSync(join(last.path, 'rft.json'), 'utf8')) as CheckpointMeta };
  } else {
    if (!opts.config) throw new Error('runJob: a config is required for a new run');
    record = await registry.create({ name: opts.config.name, config: opts.config, configPath: opts.configPath ?? null, id: opts.runId });
  }
  const cfg = opts.config!;
  const runId = record.id;
  const runDir = record.dir;
  await registry.setStatus(runId, 'running');
  mkdirSync(join(runDir, 'checkpoints'), { recursive: true });
  writeFileSync(join(runDir, 'config.yaml'), toYaml(cfg));
  const metrics = new MetricsLog(join(runDir, 'metrics.jsonl'));
  // `rft stop RUN` signals this process through the pid file.
  const pidFile = join(runDir, 'run.pid');
  writeFileSync(pidFile, String(process.pid));
  try {
    // Synchronizer `checkpoint`: explorer and trainer run as their own processes (processes-run.ts).
    // Modes without a trainer (explore, bench) move no weights: they run here whatever the synchronizer.
    const summary =
      cfg.mode === 'explore' || cfg.mode === 'bench'
        ? await executeWithoutTrainer({ opts, cfg, runId, runDir, dbPath: record.dbPath, metrics, t0, resumed: !!opts.resume })
        : cfg.synchronizer.method === 'checkpoint'
          ? await executeProcesses({ opts, cfg, runId, runDir, dbPath: record.dbPath, registry, metrics, t0, resumed: !!opts.resume })
          : await execute(opts, cfg, runId, runDir, record.dbPath, registry, metrics, t0, resumeFrom);
    await registry.setStatus(runId, opts.signal?.aborted ? endedStatus(opts.signal) : 'completed');
    return summary;
  } catch (e) {
    await registry.setStatus(runId, opts.signal?.aborted ? endedStatus(opts.signal) : 'failed', (e as Error).message);
    throw e;
  } finally {
    rmSync(pidFile, { force: true });
  }
}

async function execute(
  opts: RunOptions,
  cfg: RunConfig,
  runId: string,
  runDir: string,
  dbPath: string,
  registry: RunRegistry,
  metrics: MetricsLog,
  t0: number,
  resumeFrom?: { dir: string; meta: CheckpointMeta },
): Promise<RunSummary> {
  const pools = loadTasks(cfg);
  const tok = resumeFrom ? loadTokenizer(runDir) : makeTokenizer(cfg, [...pools.train, ...pools.eval].flatMap((t) => [t.prompt ?? '', pools.solve(t)]));
  if (!resumeFrom) saveTokenizer(tok, runDir);
  const storeUrl = cfg.buffer.storage === 'sqlite' ? dbPath : cfg.buffer.storage;
  const store: ExperienceStore = await openStore(storeUrl);
  let pool: WorkerRolloutModel | undefined;
  try {
    if (!resumeFrom) await store.putTasks(runId, pools.train);
    if (!resumeFrom && pools.experts.length) await store.appendExperiences(pools.experts.map((t) => expertExperience(tok, runId, t, pools.solve(t))));

    const model = resumeFrom ? loadCheckpoint(resumeFrom.dir).model : initialModel(cfg, tok, [...pools.train, ...pools.eval]);
    const modelCfg = model.config;
    let version = resumeFrom?.meta.version ?? 0;
    const rollout = new LocalRolloutModel(model, tok, version);
    // explorer.workers > 1: rollout on worker threads, each with a copy of the weights sent after every update.
    pool = cfg.explorer.workers > 1 ? new WorkerRolloutModel({ workers: cfg.explorer.workers, config: model.config, tokenizer: tok }) : undefined;
    const evalOpts = { maxNewTokens: cfg.explorer.eval_sampling.max_new_tokens, workflow: workflows.get(cfg.workflow.name) };
    const evals: RunSummary['evals'] = [];
    const doEval = async (stage: string, step: number): Promise<EvalResult> => {
      const r = await evaluate(rollout, pools.eval, pools.reward, evalOpts);
      evals.push({ stage, step, accuracy: r.accuracy, mean_reward: r.mean_reward });
      metrics.write({ kind: 'eval', stage, step, ...r });
      log.info(`eval after ${stage} step ${step}: accuracy ${r.accuracy.toFixed(3)}`);
      return r;
    };

    const stages = cfg.stages ?? [{ name: 'main', algorithm: cfg.algorithm, steps: cfg.trainer.steps, mode: cfg.mode === 'train' ? 'train' : 'both', wall_seconds: undefined, lr: undefined, batch_size: undefined }];
    // The stage being run decides the advantage function of fresh experiences.
    let currentAlgorithm = cfg.algorithm;
    // Raw -> verified: validity, reward filters, then the algorithm's group advantages.
    const pipeline = ExperiencePipeline.fromConfig(cfg.experience_pipeline ?? RUN_EXPERIENCE_PIPELINE, {
      advantage: (exps) => groupAdvantages(currentAlgorithm.name, exps, currentAlgorithm.params),
    });
    const explorer = new Explorer(workflows.get(cfg.workflow.name), pools.reward, new ShuffledTasks(pools.train, cfg.seed), {
      append: async (exps) => {
        await store.appendExperiences(exps);
      },
    }, {
      runId,
      tasksPerStep: cfg.explorer.tasks_per_step,
      repeatTimes: cfg.explorer.repeat_times,
      sampling: {
        maxNewTokens: cfg.explorer.sampling.max_new_tokens,
        temperature: cfg.explorer.sampling.temperature,
        topK: cfg.explorer.sampling.top_k,
        topP: cfg.explorer.sampling.top_p,
      },
      seed: cfg.seed + 1,
      process: (exps) => {
        const r = pipeline.run(exps);
        metrics.write({ kind: 'pipeline', step: explorer.step, ...r.counts });
        return r.experiences;
      },
    });

    let baseAcc: number | undefined = typeof resumeFrom?.meta.base_accuracy === 'number' ? resumeFrom.meta.base_accuracy : undefined;
    let totalSteps = resumeFrom?.meta.step ?? 0;
    const startStage = typeof resumeFrom?.meta.stage_index === 'number' ? resumeFrom.meta.stage_index : 0;
    const checkpointEvery = opts.checkpointEvery ?? 20;
    const checkpoint = async (stageIndex: number, stageStep: number, stageName: string) => {
      const dir = join(runDir, 'checkpoints', `v${version}`);
      await saveCheckpoint(model, dir, { version, step: totalSteps, stage: stageName, stage_index: stageIndex, stage_step: stageStep, base_accuracy: baseAcc }, tok);
      await store.addCheckpoint({ runId, version, path: dir, checksum: '', createdAt: Date.now() });
      await registry.addCheckpoint(runId, { version, path: dir, step: totalSteps });
      await registry.setLastStep(runId, totalSteps);
      return dir;
    };
    // base_accuracy is the accuracy of the model entering the last stage: for one stage the model
    // the run starts from, for warm-up + MIX the warm-up's result. The starting model is always
    // evaluated before the first step, and each stage's result after it.
    const lastStage = stages.length - 1;
    if (!resumeFrom) {
      const start = await doEval('start', 0);
      if (lastStage === 0) baseAcc = start.accuracy;
    }
    for (const [si, stage] of stages.entries()) {
      if (si < startStage) continue;
      // Only a resume from a checkpoint written before base_accuracy was recorded gets here without it.
      if (si === lastStage && baseAcc === undefined) baseAcc = (await doEval('resume', totalSteps)).accuracy;
      const objective = makeObjective(stage.algorithm.name, stage.algorithm.params);
      currentAlgorithm = stage.algorithm;
      // The reference model is the policy as it enters the stage (e.g. the SFT warm-up result), frozen.
      // Under LoRA the reference is the frozen base without adapters (a view: no second copy).
      const reference = objective.needsReference ? (model.lora ? model.base() : model.clone()) : undefined;
      const critic = objective.needsCritic ? new Transformer({ ...modelCfg, valueHead: true }, cfg.seed + 17) : undefined;
      const trainer = new Trainer(model, objective, trainerOptions(cfg, stage, tok.padId), reference, critic);
      const explores = objective.name !== 'sft' && stage.mode !== 'train';
      const samplerCfg = samplerConfig(stage.algorithm.name, stage.algorithm.params, cfg);
      const sampler: Sampler = makeSampler(store, samplerCfg);
      const batchSize = await stageBatchSize(store, samplerCfg, explores, stage.batch_size ?? cfg.trainer.batch_size, cfg.explorer.tasks_per_step * cfg.explorer.repeat_times);
      const stageStart = Date.now();
      const progress = opts.progress ? new Progress(stage.steps ?? Math.round(stage.wall_seconds ?? 0), `${stage.name} (${objective.name})`) : undefined;
      metrics.write({ kind: 'stage', stage: stage.name, algorithm: objective.name });
      // A resumed stage continues at its step; its wall-clock budget counts from the resume.
      let s = si === startStage && typeof resumeFrom?.meta.stage_step === 'number' ? resumeFrom.meta.stage_step : 0;
      let idleTrainer = 0;
      let idleExplorer = 0;
      const done = () => (stage.steps !== undefined && s >= stage.steps) || (stage.wall_seconds !== undefined && (Date.now() - stageStart) / 1000 >= stage.wall_seconds) || opts.signal?.aborted;
      while (!done()) {
        const e0 = performance.now();
        let stepBatch = batchSize;
        if (explores) {
          if (pool && pool.version !== version) await pool.setWeights(model, version);
          const em = await explorer.exploreStep(pool ?? rollout);
          metrics.write({ kind: 'explore', stage: stage.name, step: totalSteps, ...em, tokens_per_s: em.tokens / em.rollout_s, ...(pool ? { rollout: pool.metrics() } : {}) });
          // Synchronous: train on what this step made trainable (invalid and infra-failed samples are
          // stored but never sampled); a step that produced nothing trainable is explored again.
          if (em.trainable === 0) continue;
          stepBatch = await stageBatchSize(store, samplerCfg, true, batchSize, em.trainable);
        }
        const exploreS = (performance.now() - e0) / 1000;
        const batch = await sampler.sample({ batchSize: stepBatch, currentVersion: version, step: totalSteps, timeoutMs: 60_000 });
        const tm = await trainer.trainStep(batch.experiences, version, stageProgress({ steps: stage.steps, wallSeconds: stage.wall_seconds }, s, (Date.now() - stageStart) / 1000));
        version++;
        rollout.version = version;
        // In one process the explorer waits while the trainer trains and vice versa (sync_offset 0).
        idleTrainer += exploreS;
        idleExplorer += tm.time_total_s;
        metrics.write({ kind: 'train', stage: stage.name, ...tm, step: totalSteps, model_version: version });
        const elapsed = (Date.now() - stageStart) / 1000;
        metrics.write({ kind: 'state', stage: stage.name, step: totalSteps, trainer_idle: idleTrainer / elapsed, explorer_idle: explores ? idleExplorer / elapsed : 1 });
        s++;
        totalSteps++;
        progress?.update(stage.steps !== undefined ? s : Math.min(Math.round(elapsed), stage.wall_seconds ?? 0), `loss ${tm.loss.toFixed(3)}`);
        if (cfg.monitor.eval_every > 0 && s % cfg.monitor.eval_every === 0) await doEval(stage.name, totalSteps);
        if (s % checkpointEvery === 0) await checkpoint(si, s, stage.name);
      }
      progress?.done();
      trainer.dispose();
      reference?.dispose();
      critic?.dispose();
      if (opts.signal?.aborted) {
        await checkpoint(si, s, stage.name);
        break;
      }
      if (si < lastStage) {
        const after = await doEval(stage.name, totalSteps);
        if (si + 1 === lastStage) baseAcc = after.accuracy;
      }
      // The stage is done: a resume starts at the next one.
      await checkpoint(si + 1, 0, stage.name);
    }
    const final = await doEval('final', totalSteps);
    const summary: RunSummary = {
      run_id: runId,
      run_dir: runDir,
      // Undefined only when a stop came before the last stage began: then the newest eval is the base.
      base_accuracy: baseAcc ?? evals.at(-2)?.accuracy ?? final.accuracy,
      final_accuracy: final.accuracy,
      evals,
      trainer_steps: totalSteps,
      explore_steps: explorer.step,
      wall_seconds: (Date.now() - t0) / 1000,
      report: join(runDir, 'report.html'),
      checkpoint: join(runDir, 'checkpoints', `v${version}`),
    };
    writeReport(summary.report, `RFT Studio run ${runId}`, metrics.read(), {
      base_accuracy: summary.base_accuracy,
      final_accuracy: summary.final_accuracy,
      trainer_steps: totalSteps,
      wall_seconds: summary.wall_seconds,
      stages: stages.map((s) => `${s.name}:${s.algorithm.name}`).join(' -> '),
    });
    model.dispose();
    return summary;
  } finally {
    await pool?.close();
    await store.close();
  }
}

/**
 * In-process runs are synchronous: each step trains on exactly what the explorer just produced
 * (plus the expert share for MIX), so the usual part of the batch is one explore step's output.
 * Train-only stages use the configured batch, capped by the expert data there is.
 */
export async function stageBatchSize(store: ExperienceStore, s: { type: string; expertRatio?: number }, explores: boolean, configured: number, perExplore: number): Promise<number> {
  if (explores) {
    const ratio = s.type === 'mixed' ? (s.expertRatio ?? 0) : 0;
    return ratio > 0 ? Math.round(perExplore / (1 - ratio)) : perExplore;
  }
  if (s.type === 'expert') {
    const experts = await store.count({ source: 'expert', status: 'ok' });
    if (experts === 0) throw new Error('a train-only SFT stage needs expert experiences in the buffer (experts: in the config, or promote some)');
    return Math.min(configured, experts);
  }
  return configured;
}

/** The trainer's settings for a stage: the stage's own lr and decay over the config's trainer defaults. */
export function trainerOptions(cfg: RunConfig, stage: { lr?: number; lr_decay?: TrainerOptions['decay']; min_lr_ratio?: number }, padId: number): TrainerOptions {
  return {
    lr: stage.lr ?? cfg.trainer.lr,
    warmupSteps: cfg.trainer.warmup_steps,
    decay: stage.lr_decay ?? cfg.trainer.lr_decay,
    minLrRatio: stage.min_lr_ratio ?? cfg.trainer.min_lr_ratio,
    weightDecay: cfg.trainer.weight_decay,
    gradClip: cfg.trainer.grad_clip,
    microBatchSize: cfg.trainer.micro_batch_size,
    // Log-probs are recomputed at the temperature the explorer sampled with.
    temperature: cfg.explorer.sampling.temperature || 1,
    padId,
  };
}

/** Invalid experiences are kept in the buffer (browsable, never sampled) rather than dropped. */
export const RUN_EXPERIENCE_PIPELINE = [{ name: 'validity' }, { name: 'reward_filter', drop_invalid: false }, { name: 'advantage' }];

export function samplerConfig(algo: string, params: Record<string, unknown>, cfg: RunConfig) {
  const base = { consumer: 'trainer', maxStaleness: cfg.buffer.max_staleness };
  if (algo === 'sft') return { ...base, type: 'expert' };
  const ratio = typeof params.expert_ratio === 'number' ? params.expert_ratio : algo === 'mix' || algo === 'chord' ? 0.5 : 0;
  if (ratio > 0) return { ...base, type: 'mixed', expertRatio: ratio, usual: cfg.buffer.sampler };
  return { ...base, type: cfg.buffer.sampler };
}
