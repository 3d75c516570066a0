// Which jobs feed which trainer step. Step t's batch is tasks_per_step groups; job `t:k` runs task
// k of step t, picked by the configured selector (default a seeded shuffle) from the run's tasks (so a restarted trainer re-derives
// the same jobs and adds nothing twice). Top-up jobs `t:x<n>` replace groups that produced nothing
// trainable (empty answers, infra failures) or went stale, so the trainer never waits forever.
import type { Task } from '../../core/types.js';
import { Rng } from '../../core/rng.js';
import type { NewJob } from '../../buffer/queue/job-queue.js';
import type { RunConfig } from '../../core/config.js';
import { requiredVersion, syncOffset, type SyncPlan } from '../sync-plan.js';

export interface JobPlan {
  tasks: Task[];
  seed: number;
  /** taskset.selector: 'shuffle' (default), 'sequential' or 'random' (selectors whose picks follow from the step alone). */
  selector?: string;
  tasksPerStep: number;
  sync: SyncPlan;
  /** First target past the stage these jobs feed (no job is planned for a step of a later stage). */
  end?: number;
  /** Steps planned ahead of the trainer's (default sync.offset; synchronizer.schedule async: buffer.max_staleness). */
  lead?: number;
}

/**
 * The synchronizer as the job queue sees it. sync_offset k: job t needs v(t - k), planned k steps
 * ahead. Async: every job of a stage runs with any version from the stage's start (no explorer ever
 * waits for a weights version: it takes the newest it can load), and jobs are planned
 * buffer.max_staleness steps ahead of the trainer, so explorers run ahead by at most that much
 * (rows further ahead would only go stale).
 */
export function jobSync(cfg: RunConfig, stageStartVersion: number): { sync: SyncPlan; lead: number } {
  const sync = { interval: cfg.synchronizer.sync_interval, offset: syncOffset(cfg), stageStartVersion };
  return { sync, lead: cfg.synchronizer.schedule === 'async' ? cfg.buffer.max_staleness : sync.offset };
}

function shuffledEpoch(p: JobPlan, epoch: number): Task[] {
  return new Rng(p.seed * 1_000_003 + epoch).shuffle([...p.tasks]);
}

/** The i-th task the configured selector gives (a pure function of i, so a restarted trainer re-derives it). */
function pick(p: JobPlan, i: number, n: number): Task {
  if (p.selector === 'sequential') return p.tasks[i % n]!;
  if (p.selector === 'random') return p.tasks[new Rng(p.seed * 1_000_003 + i * 7919 + 1).int(0, n)]!;
  return shuffledEpoch(p, Math.floor(i / n))[i % n]!;
}

/** Selectors whose picks follow from the step alone; the others (priority, curriculum) are planned by the trainer's TaskFeed (selector-plan.ts). */
export const PLANNED_SELECTORS = ['shuffle', 'sequential', 'random'];

export function stepJobs(p: JobPlan, target: number): NewJob[] {
  if (p.end !== undefined && target >= p.end) return [];
  const n = p.tasks.length;
  return Array.from({ length: p.tasksPerStep }, (_, k) => pick(p, target * p.tasksPerStep + k, n)).map((task, k) =>
    job(p, target, k, task),
  );
}

/** Jobs of step `target` for tasks picked elsewhere (a selector that learns from outcomes: selector-plan.ts). */
export function stepJobsOf(p: JobPlan, target: number, tasks: Task[]): NewJob[] {
  if (p.end !== undefined && target >= p.end) return [];
  return tasks.map((task, k) => job(p, target, k, task));
}

function job(p: JobPlan, target: number, k: number, task: Task): NewJob {
  return { id: `${target}:${k}`, target, requiredVersion: requiredVersion(target, p.sync), task };
}

export function topUpJob(p: JobPlan, target: number, n: number): NewJob {
  const rng = new Rng(p.seed * 7919 + target * 131 + n + 1);
  return {
    id: `${target}:x${n}`,
    target,
    requiredVersion: requiredVersion(target, p.sync),
    task: p.tasks[rng.int(0, p.tasks.length)]!,
  };
}
