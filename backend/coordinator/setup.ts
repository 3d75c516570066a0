// Run setup: the one place a run config becomes the objects of a run (task pools from built-in
// generators or the user's files, the reward, tokenizer, initial model, task feed = selector + task
// pipeline, experience pipeline, sampler settings, trainer settings). Every process model (one
// process, explorer/trainer processes, distributed, explore/bench) builds its parts here, so none
// of them can silently drop a configured field. Nothing here imports run.ts or a process model.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { RunConfig } from '../core/config.js';
import type { Experience, Task } from '../core/types.js';
import { logger } from '../core/log.js';
import { InputError } from '../core/errors.js';
import { resolveTrainerSettings } from '../core/trainer-defaults.js';
import { presetConfig } from '../model/config.js';
import { Transformer } from '../model/transformer.js';
import { loadCheckpoint } from '../model/checkpoint.js';
import { withLora } from '../model/lora.js';
import { frozenOutsideHeap, outsideHeapNote } from '../model/external-weights.js';
import { modelSourceName, resolveModelDir } from '../model/hf/folder.js';
import { ADAPTER_CONFIG_FILE } from '../model/lora-files.js';
import { isTemplatePath } from '../model/hf/chat-template.js';
import { encodePrompt, encodeResponse, taskMessages } from '../model/chat.js';
import { CharTokenizer, loadTokenizer, trainTokenizer, type Tokenizer } from '../model/tokenizer/index.js';
import {
  formatTaskError,
  parseTasksetBytes,
  makeSelector,
  type LoadResult,
  type SelectorState,
  type TaskSelector,
  type TaskStat,
} from '../buffer/taskset/index.js';
import { TaskPipeline } from '../buffer/pipeline/task/pipeline.js';
import '../buffer/pipeline/task/index.js';
import { ExperiencePipeline } from '../buffer/pipeline/experience/index.js';
import { newExperienceId, workflows, type RewardFn, type Workflow } from '../explorer/workflow.js';
import '../explorer/workflows/index.js';
import { resolveReward } from '../explorer/reward-resolve.js';
import { makeRolloutEngine, type SyncedRolloutModel } from '../explorer/rollout-engine.js';
import { rewardFns } from '../explorer/rewards/index.js';
import { builtinTasksets } from '../explorer/tasksets/index.js';
import type { TrainerOptions } from '../trainer/trainer.js';
import { groupAdvantages, pipelineComputesAdvantages, resolveAlgorithm } from '../trainer/objectives.js';
import { checkModelTakesImages, runVisionConfig } from './model-vision.js';
import { assertWorkspaceCodeLoaded } from './workspace-code.js';
import { samplerStaleness } from './sync-plan.js';
import { DEFAULT_TRAIN_BATCH, leastBatch, usualRows } from './stage-batch.js';
import { expertShare } from '../buffer/sampler/mixed.js';

const log = logger('setup');

export type Stage = NonNullable<RunConfig['stages']>[number];
type TasksetRef = RunConfig['taskset'];

/** The stages of a config; a config without `stages` is one stage `main` of its algorithm. */
export function stagesOf(cfg: RunConfig): Stage[] {
  return (
    cfg.stages ?? [
      {
        name: 'main',
        algorithm: cfg.algorithm,
        steps: cfg.trainer.steps,
        mode: cfg.mode === 'bench' ? 'both' : cfg.mode,
        wall_seconds: undefined,
        lr: undefined,
        batch_size: undefined,
      },
    ]
  );
}

/**
 * Taskset, eval and expert file paths and workflow.file are relative to the config file; a run keeps them absolute
 * (its config is copied into the run folder, and child processes start elsewhere).
 */
function isDbUrl(s: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(s);
}

export function resolveConfigPaths(cfg: RunConfig, configFile: string): RunConfig {
  const base = dirname(resolve(configFile));
  const abs = <T extends { path?: string } | undefined>(r: T): T =>
    r?.path && !isAbsolute(r.path) ? { ...r, path: resolve(base, r.path) } : r;
  const code = cfg.workflow.file;
  const workflow = code && !isAbsolute(code) ? { ...cfg.workflow, file: resolve(base, code) } : cfg.workflow;
  // model.checkpoint too (an HF folder beside the config); an HF-cache path is absolute anyway.
  const ck = cfg.model.checkpoint;
  let model = ck && !isAbsolute(ck) ? { ...cfg.model, checkpoint: resolve(base, ck) } : cfg.model;
  // model.chat_template as a template file (a name stays a name).
  const ct = model.chat_template;
  if (ct && isTemplatePath(ct) && !isAbsolute(ct)) model = { ...model, chat_template: resolve(base, ct) };
  // buffer.train_from.path: a file beside the config (a database URL stays as it is).
  const tf = cfg.buffer.train_from;
  const buffer =
    tf && !isAbsolute(tf.path) && !isDbUrl(tf.path)
      ? { ...cfg.buffer, train_from: { ...tf, path: resolve(base, tf.path) } }
      : cfg.buffer;
  return { ...cfg, model, taskset: abs(cfg.taskset), eval: abs(cfg.eval), experts: abs(cfg.experts), workflow, buffer };
}

export interface TaskPools {
  train: Task[];
  eval: Task[];
  /** Expert demonstrations: the task and its response (solve). */
  experts: Task[];
  /** workflow.reward, or the task's own `reward` field when it has one. */
  reward: RewardFn;
  /** A task's reference solution: a demonstration's response, a generator's solution, or its answer. */
  solve: (t: Task) => string;
  /** The eval set is a share held out of the taskset (a reloaded taskset must leave it out too). */
  heldOut?: boolean;
  /** Where the eval set came from, in words, with its size (the log, the run summary, the report); `none: ...` says why there is none. */
  evalSet: string;
}

/** A file of the user's, loaded with its field mapping; bad records are logged as FILE:LINE: field and skipped. */
function loadFile(ref: TasksetRef, what: string, role: 'task' | 'expert'): LoadResult {
  const file = ref.path!;
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    throw new InputError(
      `cannot read ${what} file '${file}' (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      { field: `${what}.path` },
    );
  }
  let r: LoadResult;
  try {
    r = parseTasksetBytes(bytes, file, { fields: ref.format, role, domain: ref.domain, defaultIds: true });
  } catch (e) {
    throw new InputError((e as Error).message, { file, field: `${what}.path` });
  }
  for (const e of r.errors.slice(0, 20)) log.warn(`${formatTaskError(e)} (skipped)`);
  if (r.errors.length > 20) log.warn(`${file}: ${r.errors.length - 20} more bad record(s) skipped`);
  if (r.tasks.length === 0) {
    const first = r.errors[0];
    throw new InputError(
      `${what}: no valid record in '${file}' (${r.records} record(s)${first ? `; first problem: ${formatTaskError(first)}` : ''})`,
      { file, field: `${what}.path` },
    );
  }
  return r;
}

/** Drop tasks whose reward cannot be resolved (no workflow.reward and no own `reward`, or an unknown name). */
function checkRewards(r: LoadResult, ref: TasksetRef, defaultReward: string | undefined): Task[] {
  const out: Task[] = [];
  const key = ref.format?.reward_key ?? 'reward';
  r.tasks.forEach((t, i) => {
    const own = t.metadata?.reward;
    const at = `${r.file}:${r.lines[i]}: field '${key}': `;
    if (own === undefined && defaultReward === undefined)
      log.warn(`${at}no reward: set workflow.reward or give the task a '${key}' (skipped)`);
    else if (
      own !== undefined &&
      (typeof own !== 'string' || !(rewardFns.has(own) || own.includes(':') || own === 'environment'))
    )
      log.warn(`${at}unknown reward ${JSON.stringify(own)}; known: ${rewardFns.names().join(', ')} (skipped)`);
    else out.push(t);
  });
  return out;
}

/** The reward of a run: a task's own `reward` field first, else workflow.reward. */
export function runReward(cfg: RunConfig): RewardFn {
  assertWorkspaceCodeLoaded(cfg);
  const fallback = cfg.workflow.reward ? resolveReward(cfg.workflow.reward) : undefined;
  return (task, response, ctx) => {
    const own = task.metadata?.reward;
    if (typeof own === 'string') return resolveReward(own)(task, response, ctx);
    if (fallback) return fallback(task, response, ctx);
    return Promise.resolve({
      reward: 0,
      status: 'infra_failure',
      reason: `task '${task.id}' has no reward: set workflow.reward or the task's reward field`,
    });
  };
}

function pool(cfg: RunConfig, ref: TasksetRef, what: 'taskset' | 'eval' | 'experts', split: 'train' | 'eval'): Task[] {
  if (ref.builtin) {
    if (what !== 'experts' && !cfg.workflow.reward)
      throw new InputError(
        `workflow.reward: required with a built-in ${what} (its tasks carry no reward of their own)`,
        { field: 'workflow.reward' },
      );
    return builtinTasksets.get(ref.builtin).generate(ref.size, ref.seed, ref.split ?? split);
  }
  const r = loadFile(ref, what, what === 'experts' ? 'expert' : 'task');
  const tasks = what === 'experts' ? r.tasks : checkRewards(r, ref, cfg.workflow.reward);
  if (tasks.length === 0)
    throw new InputError(`${what}: no task of '${ref.path}' has a reward (set workflow.reward)`, {
      file: ref.path,
      field: 'workflow.reward',
    });
  log.info(
    `${what}: ${tasks.length} task(s) from ${ref.path}${r.errors.length ? `, ${r.errors.length} bad record(s) skipped` : ''}`,
  );
  return tasks;
}

/** Train, eval and expert pools of a config; file pools go through their own `pipeline` too. */
export function loadTasks(cfg: RunConfig): TaskPools {
  // Custom reward names (workflow.file) resolve only once the file is loaded (workspace-code.ts).
  assertWorkspaceCodeLoaded(cfg);
  const gen = cfg.taskset.builtin ? builtinTasksets.get(cfg.taskset.builtin) : undefined;
  let train = pipelineOf(cfg.taskset, 'taskset.pipeline', pool(cfg, cfg.taskset, 'taskset', 'train'));
  let ev: Task[];
  let evalSet: string;
  const seed = cfg.eval?.seed ?? 0;
  if (cfg.eval?.holdout !== undefined || (!cfg.eval && cfg.taskset.path && train.length >= HOLDOUT_MIN_TASKS)) {
    const share = cfg.eval?.holdout ?? DEFAULT_HOLDOUT;
    const why = cfg.eval
      ? 'eval.holdout'
      : `no eval given: the default for a taskset file of ${HOLDOUT_MIN_TASKS} tasks or more`;
    // After taskset.pipeline, so a task it drops or dedupes is not held out either.
    const split = holdOut(train, share, seed);
    if (split.eval.length === 0 || split.train.length === 0)
      throw new InputError(
        `eval.holdout: ${train.length} task(s) in the taskset are too few to hold ${share} of them out and train on the rest: give an eval set (eval.path or eval.builtin)`,
        { field: 'eval.holdout' },
      );
    evalSet = `${+(share * 100).toFixed(2)}% of the taskset held out by seed ${seed}: ${split.eval.length} of ${train.length} tasks (${why})`;
    ({ train, eval: ev } = split);
    log.info(`eval: ${evalSet}; they are never trained on`);
  } else if (cfg.eval) {
    ev = pool(cfg, cfg.eval, 'eval', 'eval');
    evalSet = cfg.eval.path
      ? `eval file ${cfg.eval.path}`
      : `built-in ${cfg.eval.builtin} (${cfg.eval.split ?? 'eval'} split, seed ${cfg.eval.seed})`;
  } else if (gen) {
    ev = gen.generate(200, cfg.taskset.seed, 'eval');
    evalSet = `the eval split of built-in ${cfg.taskset.builtin}`;
  } else {
    // Too few tasks to spare any: the run trains on all of them and reports no held-out accuracy.
    ev = [];
    evalSet = `none: no eval given and the taskset has ${train.length} task(s), under ${HOLDOUT_MIN_TASKS}, so none is held out and no held-out accuracy is measured (set eval.path, or eval.holdout to hold a share out anyway)`;
    log.warn(`eval: ${evalSet}`);
  }
  const experts = cfg.experts ? pool(cfg, cfg.experts, 'experts', 'train') : [];
  const solve = (t: Task): string => {
    const resp = t.metadata?.response;
    if (typeof resp === 'string') return resp;
    if (builtinTasksets.has(t.taskset)) return builtinTasksets.get(t.taskset).solve(t);
    const sol = t.metadata?.solution;
    return typeof sol === 'string' ? sol : (t.answer ?? '');
  };
  const evalTasks = ev.length ? pipelineOf(cfg.eval, 'eval.pipeline', ev) : ev;
  const heldOut = cfg.eval?.holdout !== undefined || (!cfg.eval && !gen && ev.length > 0);
  return {
    train,
    eval: evalTasks,
    evalSet: evalSet + (evalTasks.length !== ev.length ? `, ${evalTasks.length} after eval.pipeline` : ''),
    experts: pipelineOf(cfg.experts, 'experts.pipeline', experts),
    reward: runReward(cfg),
    solve,
    ...(heldOut ? { heldOut } : {}),
  };
}

/** Without `eval`, a taskset file of at least HOLDOUT_MIN_TASKS tasks holds out DEFAULT_HOLDOUT of them. */
export const DEFAULT_HOLDOUT = 0.1;
export const HOLDOUT_MIN_TASKS = 20;

/**
 * Splits tasks into train and a held-out share, the same in every process of a run: tasks are
 * grouped by prompt (a prompt given twice never lands on both sides) and the groups ordered by a
 * seeded hash of the prompt, so the pick depends on the seed and the tasks, not on their file order.
 */
export function holdOut(tasks: Task[], share: number, seed: number): { train: Task[]; eval: Task[] } {
  const key = (t: Task) => JSON.stringify(t.messages ?? t.prompt ?? t.id);
  const groups = new Map<string, Task[]>();
  for (const t of tasks) (groups.get(key(t)) ?? groups.set(key(t), []).get(key(t))!).push(t);
  const rank = (k: string) => createHash('sha256').update(`${seed}\0${k}`).digest('hex');
  const order = [...groups.keys()].map((k) => ({ k, r: rank(k) })).sort((a, b) => (a.r < b.r ? -1 : a.r > b.r ? 1 : 0));
  const want = Math.max(1, Math.round(tasks.length * share));
  const held = new Set<string>();
  let n = 0;
  for (const { k } of order) {
    if (n >= want) break;
    held.add(k);
    n += groups.get(k)!.length;
  }
  return { train: tasks.filter((t) => !held.has(key(t))), eval: tasks.filter((t) => held.has(key(t))) };
}

/** Tasks of a reloaded taskset file without the run's held-out ones (by id and by prompt). */
export function withoutHeldOut(pools: TaskPools, tasks: Task[]): Task[] {
  if (!pools.heldOut) return tasks;
  const key = (t: Task) => JSON.stringify(t.messages ?? t.prompt ?? t.id);
  const ids = new Set(pools.eval.map((t) => t.id));
  const prompts = new Set(pools.eval.map(key));
  return tasks.filter((t) => !ids.has(t.id) && !prompts.has(key(t)));
}

function pipelineOf(ref: TasksetRef | undefined, path: string, tasks: Task[]): Task[] {
  if (!ref?.pipeline) return tasks;
  const r = taskPipeline(ref.pipeline, path).run(tasks);
  log.info(`${path}: ${r.metrics.map((m) => `${m.name} ${m.in}->${m.out}`).join(', ')}`);
  if (r.tasks.length === 0) throw new InputError(`${path}: the task pipeline left no task`, { field: path });
  return r.tasks;
}

export function taskPipeline(config: unknown, path: string): TaskPipeline {
  try {
    return TaskPipeline.fromConfig(config, {}, path);
  } catch (e) {
    throw new InputError((e as Error).message, { field: path });
  }
}

/**
 * The explorer's task source: the configured selector over the (pipelined) train tasks, told the
 * outcome of each step so priority and curriculum selectors learn which tasks are hard.
 */
export class TaskFeed {
  readonly selector: TaskSelector;
  constructor(cfg: RunConfig, tasks: Task[], seed = cfg.seed) {
    try {
      this.selector = makeSelector(cfg.taskset.selector, tasks, { seed, minWeight: cfg.taskset.priority_floor });
    } catch (e) {
      throw new InputError(`taskset.selector: ${(e as Error).message}`, { field: 'taskset.selector' });
    }
  }
  next(n: number): Task[] {
    return this.selector.next(n);
  }
  /** Rewards of explored (usual, ok) experiences per task. */
  observe(exps: Experience[]): void {
    const byTask = new Map<string, number[]>();
    for (const e of exps)
      if (e.source === 'usual' && e.status === 'ok')
        (byTask.get(e.taskId) ?? byTask.set(e.taskId, []).get(e.taskId)!).push(e.reward);
    const stats: TaskStat[] = [...byTask].map(([taskId, rewards]) => ({ taskId, rewards }));
    if (stats.length) this.selector.update(stats);
  }
  state(): SelectorState {
    return this.selector.state();
  }
  restore(s: SelectorState | null | undefined): void {
    if (s && s.name === this.selector.name) this.selector.restore(s);
  }
}

/** Invalid experiences are kept in the buffer (browsable, never sampled) rather than dropped. */
export const RUN_EXPERIENCE_PIPELINE = [
  { name: 'validity' },
  { name: 'reward_filter', drop_invalid: false },
  { name: 'advantage' },
];

/** Raw -> verified experiences as configured; `algorithm()` is the stage being run (its advantages). */
export function experiencePipeline(
  cfg: RunConfig,
  algorithm: () => { name: string; params: Record<string, unknown> },
): ExperiencePipeline {
  try {
    return ExperiencePipeline.fromConfig(cfg.experience_pipeline ?? RUN_EXPERIENCE_PIPELINE, {
      advantage: (exps) => {
        const a = algorithm();
        if (!pipelineComputesAdvantages(a.name, a.params)) return false;
        groupAdvantages(a.name, exps, a.params);
        return true;
      },
    });
  } catch (e) {
    throw new InputError((e as Error).message, { field: 'experience_pipeline' });
  }
}

/** What the explorer does with a step's raw experiences in every process model: pipeline, then the feed learns. */
export function processExperiences(
  pipeline: ExperiencePipeline,
  feed: TaskFeed | undefined,
  onCounts?: (c: Record<string, number>) => void,
): (exps: Experience[]) => Experience[] {
  return (raw) => {
    const r = pipeline.run(raw);
    onCounts?.(r.counts);
    // Outcomes of the raw rollouts (a filter that drops a group does not hide how hard the task was).
    feed?.observe(raw);
    return r.experiences;
  };
}

export function makeTokenizer(cfg: RunConfig, texts: string[]): Tokenizer {
  // The chosen chat template is saved with the run's tokenizer (as chat_template.jinja), so every
  // process, worker and checkpoint of the run reads it from there without the config.
  const chatTemplate = cfg.model.chat_template;
  if (cfg.tokenizer.path) return loadTokenizer(cfg.tokenizer.path, { chatTemplate });
  // A run that starts from a checkpoint speaks its tokenizer (the ids must mean what they meant).
  // (An HF-cache entry `models--org--name` holds its files in a snapshot folder: look there.)
  if (
    cfg.model.checkpoint &&
    existsSync(cfg.model.checkpoint) &&
    existsSync(join(resolveModelDir(cfg.model.checkpoint), 'tokenizer.json'))
  )
    return loadTokenizer(cfg.model.checkpoint, { chatTemplate });
  if (chatTemplate !== undefined)
    throw new InputError(
      'a chat template is only for a Hugging Face model (model.checkpoint with its tokenizer); this run trains its own tokenizer, whose chat layout is fixed',
      { field: 'model.chat_template' },
    );
  if (cfg.tokenizer.kind === 'char') return CharTokenizer.train(texts);
  return trainTokenizer('bpe', texts, { vocabSize: cfg.tokenizer.vocab_size });
}

/** Texts a new tokenizer is trained on: prompts (system prompts included) and solutions of every pool. */
export function tokenizerTexts(pools: TaskPools): string[] {
  return [...pools.train, ...pools.eval, ...pools.experts].flatMap((t) => [
    t.prompt ?? '',
    ...(t.messages ?? []).map((m) => m.content),
    pools.solve(t),
  ]);
}

/**
 * The weights a new run starts from: `model.checkpoint` when set (checked against the tokenizer),
 * else a fresh model of `model.size` initialised from the seed. `tasks` (the run's train and eval
 * tasks) size the vision input of workflow `vision` runs.
 */
export function initialModel(cfg: RunConfig, tok: Tokenizer, tasks: Task[] = []): Transformer {
  if (!cfg.model.checkpoint) {
    const vision = runVisionConfig(cfg, tasks);
    return withLora(
      new Transformer(
        presetConfig(cfg.model.size, tok.vocabSize, {
          ...(cfg.model.max_seq_len ? { maxSeqLen: cfg.model.max_seq_len } : {}),
          ...(vision ? { vision } : {}),
        }),
        cfg.seed,
      ),
      cfg.model.lora,
      cfg.seed,
    );
  }
  const dir = cfg.model.checkpoint;
  if (!existsSync(dir) || !existsSync(join(resolveModelDir(dir), 'config.json')))
    throw new InputError(`no checkpoint at '${dir}' (config.json missing)`, { field: 'model.checkpoint' });
  let model: Transformer;
  try {
    // Under LoRA the frozen base stays outside the 4 GiB wasm heap (1B-class models fit).
    model = loadCheckpoint(dir, { external: frozenOutsideHeap(cfg.model.lora) }).model;
    // The run's checkpoints (and their PEFT exports) name the model the run started from, not
    // their own folder: config.json's _name_or_path rides along through every save and resume.
    if (model.config.hfConfig) model.config.hfConfig._name_or_path = runBaseModel(dir);
    const note = outsideHeapNote(model);
    if (note) log.info(`model: frozen base, ${note}`);
  } catch (e) {
    throw new InputError(`checkpoint '${dir}' cannot be loaded: ${(e as Error).message}`, {
      field: 'model.checkpoint',
    });
  }
  if (model.config.vocabSize < tok.vocabSize) {
    model.dispose();
    throw new InputError(
      `checkpoint '${dir}' has a vocabulary of ${model.config.vocabSize}, the tokenizer ${tok.vocabSize}: give the checkpoint's tokenizer (tokenizer.path)`,
      { field: 'model.checkpoint' },
    );
  }
  try {
    checkModelTakesImages(cfg, model.config, tasks, `checkpoint '${dir}'`);
    return withLora(model, cfg.model.lora, cfg.seed);
  } catch (e) {
    model.dispose();
    throw e;
  }
}

/**
 * The base a run from `model.checkpoint` names (PEFT's base_model_name_or_path): a LoRA checkpoint
 * of an earlier run keeps the base its adapters were trained on; any other folder names itself
 * (`org/name` for a Hugging Face cache entry, else its absolute path: `hf/folder.ts modelSourceName`).
 */
export function runBaseModel(dir: string): string {
  const adapter = join(resolveModelDir(dir), ADAPTER_CONFIG_FILE);
  if (existsSync(adapter)) {
    try {
      const base = (JSON.parse(readFileSync(adapter, 'utf8')) as { base_model_name_or_path?: unknown })
        .base_model_name_or_path;
      if (typeof base === 'string' && base) return base;
    } catch {
      // an unreadable adapter_config.json: the folder names itself (loading reports the file)
    }
  }
  return modelSourceName(dir);
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

/** The sampler of a stage: the algorithm bundle's expert share (sampling.expertRatio, or params.expert_ratio). */
export function samplerConfig(
  algo: string,
  params: Record<string, unknown>,
  cfg: RunConfig,
  runId?: string,
): { consumer: string; maxStaleness: number; type: string; expertRatio?: number; usual?: string; runId?: string } {
  // runId: the sampler takes this run's experiences only (runs may share a database).
  // Never older rows than the synchronizer makes (sync-plan.ts samplerStaleness), within buffer.max_staleness.
  const base = { consumer: 'trainer', maxStaleness: samplerStaleness(cfg), ...(runId ? { runId } : {}) };
  const bundle = resolveAlgorithm(algo, params);
  // DPO reads stored preference pairs of one prompt (backend/buffer/pairs.ts), never arbitrary rows.
  if (bundle.policyLoss.fn === 'dpo') return { ...base, type: 'pairs' };
  const ratio = bundle.sampling.expertRatio;
  if (ratio >= 1) return { ...base, type: 'expert' };
  if (ratio > 0) return { ...base, type: 'mixed', expertRatio: ratio, usual: usualSampler(cfg) };
  return { ...base, type: usualSampler(cfg) };
}

/**
 * buffer.sampler, or the synchronizer's default: `fresh` (the newest rows within max_staleness) in
 * async, where the explorer runs ahead and FIFO would train the oldest allowed rows; `fifo` otherwise
 * (the staleness bound of sync and one_step_off already leaves only the rows the schedule makes).
 */
export function usualSampler(cfg: RunConfig): string {
  if (cfg.buffer.sampler !== undefined) return cfg.buffer.sampler;
  return cfg.synchronizer.mode === 'async' ? 'fresh' : 'fifo';
}

/**
 * A stage's trainer batch in every placement (stage-batch.ts). An exploring stage without a configured
 * batch trains one explore step's rollouts (tasks_per_step x repeat_times, plus the expert share for
 * MIX, capped by the expert rows there are); with one (`configured`, given by `field`) it trains that,
 * expert share included. Each placement fills a step that is short of it (memory lockstep and the
 * explorer process explore the step again, the distributed trainer queues top-up jobs). Train-only
 * stages use the configured batch (default 64), capped by the expert data there is.
 */
export async function stageBatchSize(
  store: { count(f: { source: 'expert'; status: 'ok'; runId?: string }): Promise<number> },
  s: { type: string; expertRatio?: number; runId?: string },
  explores: boolean,
  configured: number | undefined,
  perExplore: number,
  field = 'trainer.batch_size',
): Promise<number> {
  const scope = s.runId ? { runId: s.runId } : {};
  // Stored preference pairs are reused data, not one explore step's output: the configured batch, whole pairs.
  if (s.type === 'pairs') {
    const batch = configured ?? DEFAULT_TRAIN_BATCH;
    if (batch % 2 !== 0)
      throw new InputError(`a DPO stage trains on (chosen, rejected) pairs: its batch_size must be even, got ${batch}`);
    return batch;
  }
  if (explores) {
    const ratio = s.type === 'mixed' ? (s.expertRatio ?? 0) : 0;
    if (configured !== undefined && usualRows(configured, ratio) < perExplore)
      throw new InputError(
        `${field} ${configured}: its rollout share ${usualRows(configured, ratio)} is less than one explore step (${perExplore} rollouts); give ${leastBatch(perExplore, ratio)} or more`,
      );
    if (!(ratio > 0)) return configured ?? perExplore;
    // The expert share of a batch cannot be more expert rows than there are (the sampler would wait forever).
    const experts = await store.count({ source: 'expert', status: 'ok', ...scope });
    if (experts === 0)
      throw new InputError(
        `the algorithm samples ${Math.round(ratio * 100)}% expert rows, and the buffer has no expert experiences (experts: in the config, or promote some)`,
      );
    if (configured === undefined) return Math.min(Math.round(perExplore / (1 - ratio)), Math.floor(experts / ratio));
    const share = expertShare(configured, ratio);
    if (share > experts)
      throw new InputError(
        `${field} ${configured}: its expert share (expert_ratio ${ratio}) is ${share} rows a step, and the buffer has ${experts} expert experience(s); give a smaller ${field}, more experts, or a lower expert_ratio`,
      );
    return configured;
  }
  const batch = configured ?? DEFAULT_TRAIN_BATCH;
  if (s.type === 'expert') {
    const experts = await store.count({ source: 'expert', status: 'ok', ...scope });
    if (experts === 0)
      throw new InputError(
        'a train-only SFT stage needs expert experiences in the buffer (experts: in the config, or promote some)',
      );
    return Math.min(batch, experts);
  }
  return batch;
}

/** The trainer's settings for a stage: the stage's own lr and decay over the config's trainer defaults; `hidden`: the model's hidden size. */
export function trainerOptions(
  cfg: RunConfig,
  stage: { lr?: number; lr_decay?: TrainerOptions['decay']; min_lr_ratio?: number },
  padId: number,
  hidden?: number,
): TrainerOptions {
  // Unset lr / warm-up / clip: the defaults of a pretrained checkpoint (full or LoRA, lr scaled to the model's width) or of a preset from scratch.
  const t = resolveTrainerSettings(cfg, stage.lr, hidden);
  return {
    lr: t.lr,
    warmupSteps: t.warmup_steps,
    decay: stage.lr_decay ?? cfg.trainer.lr_decay,
    minLrRatio: stage.min_lr_ratio ?? cfg.trainer.min_lr_ratio,
    weightDecay: cfg.trainer.weight_decay,
    gradClip: t.grad_clip,
    microBatchSize: cfg.trainer.micro_batch_size,
    // Log-probs are recomputed at the temperature the explorer sampled with.
    temperature: cfg.explorer.sampling.temperature || 1,
    padId,
  };
}

/** Held-out evaluation settings (greedy; eval_sampling.max_new_tokens and the workflow) of every process model. */
export function evalOptions(cfg: RunConfig): { maxNewTokens: number; workflow: Workflow } {
  return { maxNewTokens: cfg.explorer.eval_sampling.max_new_tokens, workflow: workflows.get(cfg.workflow.name) };
}

/**
 * The synced rollout model of every process model (`explorer.engine`, `explorer.workers`): llama.cpp
 * on a GGUF of each version, native worker threads, or undefined where the policy samples in place.
 * `disposeReplaced`: the caller hands over each loaded model (an explorer process).
 */
export function rolloutEngine(
  cfg: RunConfig,
  modelCfg: Transformer['config'],
  tok: Tokenizer,
  opts: { disposeReplaced?: boolean; overlap?: boolean } = {},
): SyncedRolloutModel | undefined {
  return makeRolloutEngine({
    engine: cfg.explorer.engine,
    workers: cfg.explorer.workers,
    llamaGpu: cfg.explorer.llama_cpp_gpu,
    config: modelCfg,
    tokenizer: tok,
    ...opts,
  });
}

/** The rollouts' sampling settings (explorer.sampling), as every process model's explorer passes them. */
export function rolloutSampling(cfg: RunConfig) {
  const s = cfg.explorer.sampling;
  return { maxNewTokens: s.max_new_tokens, temperature: s.temperature, topK: s.top_k, topP: s.top_p };
}

/** Explorer options shared by every process model. */
export function explorerOptions(cfg: RunConfig, runId: string, seed: number) {
  return {
    runId,
    tasksPerStep: cfg.explorer.tasks_per_step,
    repeatTimes: cfg.explorer.repeat_times,
    sampling: rolloutSampling(cfg),
    seed,
    ...(cfg.explorer.partial_rollout
      ? {
          partial: {
            maxTokensPerStep: cfg.explorer.partial_rollout.max_tokens_per_step,
            maxStaleness: samplerStaleness(cfg),
          },
        }
      : {}),
  };
}
