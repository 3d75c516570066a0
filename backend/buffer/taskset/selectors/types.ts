// Task selectors: which tasks the explorer takes next (sequential, shuffle, random, priority, curriculum).
// State is plain JSON so a resumed run continues where it stopped.
import type { Task } from '../../../core/types.js';

/** Outcome of a task: its success rate (over `count` attempts, default 1) or the rewards of its rollouts. */
export interface TaskStat {
  taskId: string;
  successRate?: number;
  count?: number;
  rewards?: number[];
}

export type SelectorState = Record<string, unknown> & { name: string };

export interface TaskSelector {
  readonly name: string;
  /** The next n tasks (fewer only when there are no tasks). */
  next(n: number): Task[];
  update(stats: TaskStat[]): void;
  /** Replace the task list (a watched taskset was edited); per-task state is kept by id. */
  setTasks(tasks: Task[]): void;
  state(): SelectorState;
  restore(state: SelectorState): void;
}

export interface SelectorOptions {
  seed?: number;
  /** A reward at or above this counts as a success (default 0.5). */
  successThreshold?: number;
  /** Priority: success rate assumed for tasks with no stats yet (default 0.5). */
  priorSuccessRate?: number;
  /** Priority: smallest weight, so solved tasks still come back now and then (default 0.1 = a tenth of an unsolved task's weight; run configs: taskset.priority_floor). */
  minWeight?: number;
  /** Curriculum: share of tasks (easiest first) available at step 0 (default 0.2). */
  startFraction?: number;
  /** Curriculum: steps until every task is available (default 100). */
  rampSteps?: number;
  /** Curriculum: slide a fixed-size window to harder tasks instead of growing it. */
  slide?: boolean;
}

export type SelectorFactory = (tasks: Task[], opts: SelectorOptions) => TaskSelector;
