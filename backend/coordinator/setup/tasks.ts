// Run setup, the tasks: task pools from built-in generators or the user's files (with their
// pipelines, the held-out eval share and the reward), the task feed (selector + outcomes), and expert
// demonstrations as experiences. Every placement builds these here, so none of them can silently
// drop a configured field. Nothing in setup/ imports run.ts or a placement.
import { createHash } from 'node:crypto';
import type { RunConfig } from '../../core/config.js';
import type { Experience, Task } from '../../core/types.js';
import { logger } from '../../core/log.js';
import { InputError } from '../../core/errors.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../model/chat.js';
import type { Tokenizer } from '../../model/tokenizer/index.js';
import {
  formatTaskError,
  loadTaskset,
  makeSelector,
  type LoadResult,
  type SelectorState,
  type TaskSelector,
  type TaskStat,
} from '../../buffer/taskset/index.js';
import { TaskPipeline } from '../../buffer/pipeline/task/pipeline.js';
import { newExperienceId, type RewardFn } from '../../explorer/workflow.js';
import { resolveReward } from '../../explorer/reward-resolve.js';
import { rewardFns } from '../../explorer/rewards/index.js';
import { builtinTasksets } from '../../explorer/tasksets/index.js';
import { assertWorkspaceCodeLoaded } from '../workspace-code.js';

const log = logger('setup');

type TasksetRef = RunConfig['taskset'];

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

/** A file (or dataset folder) of the user's, loaded with its field mapping; bad records are logged as FILE:LINE: field and skipped. */
async function loadFile(ref: TasksetRef, what: string, role: 'task' | 'expert'): Promise<LoadResult> {
  const file = ref.path!;
  let r: LoadResult;
  try {
    r = await loadTaskset(file, {
      fields: ref.format,
      role,
      domain: ref.domain,
      defaultIds: true,
      ...(ref.split !== undefined ? { split: ref.split } : {}),
      // A dataset folder without `split`: train for the taskset and experts, test (or validation) for eval.
      defaultSplits: what === 'eval' ? ['test', 'validation', 'eval'] : ['train'],
    });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code) throw new InputError(`cannot read ${what} file '${file}' (${code})`, { field: `${what}.path` });
    throw new InputError((e as Error).message, {
      file,
      field: `${what}${ref.split !== undefined ? '.split' : '.path'}`,
    });
  }
  for (const w of r.warnings ?? []) log.warn(formatTaskError(w));
  for (const n of r.notes ?? []) log.warn(n);
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

/**
 * `rft run --check`: each taskset, eval and experts file the config names, opened and validated as a
 * run reads it (a FIFO, a device, a binary file or one without a valid record is refused by name);
 * what was read, per file, e.g. `taskset: 40 task(s), 2 bad record(s)`.
 */
export async function checkTaskFiles(cfg: RunConfig): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const refs: [TasksetRef | undefined, 'taskset' | 'eval' | 'experts'][] = [
    [cfg.taskset, 'taskset'],
    [cfg.eval, 'eval'],
    [cfg.experts, 'experts'],
  ];
  for (const [ref, what] of refs) {
    if (!ref?.path) continue;
    const r = await loadFile(ref, what, what === 'experts' ? 'expert' : 'task');
    out[what] =
      `${r.tasks.length} task(s)${r.errors.length ? `, ${r.errors.length} bad record(s)` : ''} in ${ref.path}`;
  }
  return out;
}

/** Drop tasks whose reward cannot be resolved (no workflow.reward and no own `reward`, or an unknown name). */
function checkRewards(r: LoadResult, ref: TasksetRef, defaultReward: string | undefined): Task[] {
  const out: Task[] = [];
  const key = ref.format?.reward_key ?? 'reward';
  r.tasks.forEach((t, i) => {
    const own = t.metadata?.reward;
    const at = `${r.recordFiles?.[i] ?? r.file}:${r.lines[i]}: field '${key}': `;
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

async function pool(
  cfg: RunConfig,
  ref: TasksetRef,
  what: 'taskset' | 'eval' | 'experts',
  split: 'train' | 'eval',
): Promise<Task[]> {
  if (ref.builtin) {
    if (what !== 'experts' && !cfg.workflow.reward)
      throw new InputError(
        `workflow.reward: required with a built-in ${what} (its tasks carry no reward of their own)`,
        { field: 'workflow.reward' },
      );
    return builtinTasksets.get(ref.builtin).generate(ref.size, ref.seed, (ref.split as 'train' | 'eval') ?? split);
  }
  const r = await loadFile(ref, what, what === 'experts' ? 'expert' : 'task');
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
export async function loadTasks(cfg: RunConfig): Promise<TaskPools> {
  // Custom reward names (workflow.file) resolve only once the file is loaded (workspace-code.ts).
  assertWorkspaceCodeLoaded(cfg);
  const gen = cfg.taskset.builtin ? builtinTasksets.get(cfg.taskset.builtin) : undefined;
  let train = pipelineOf(cfg.taskset, 'taskset.pipeline', await pool(cfg, cfg.taskset, 'taskset', 'train'));
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
    ev = await pool(cfg, cfg.eval, 'eval', 'eval');
    evalSet = cfg.eval.path
      ? `eval file ${cfg.eval.path}${cfg.eval.split ? ` (split ${cfg.eval.split})` : ''}`
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
  const experts = cfg.experts ? await pool(cfg, cfg.experts, 'experts', 'train') : [];
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
