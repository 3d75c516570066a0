// Priority sampling (Kimi k1.5): weight = max(floor, 1 - success rate), so tasks the model fails on
// come up more and solved ones still come back now and then (floor: taskset.priority_floor).
// Tasks without stats get a prior success rate. Within a batch, tasks are drawn without replacement
// (Efraimidis-Spirakis keys u^(1/w)); a batch larger than the task list starts another round.
import { Rng } from '../../../core/rng.js';
import type { Task } from '../../../core/types.js';
import { SuccessStats, callSeed } from './stats.js';
import type { SelectorOptions, SelectorState, TaskSelector } from './types.js';

/** Default smallest weight: a solved task keeps a tenth of the chance of a task never solved, so a forgotten one is noticed. */
export const PRIORITY_FLOOR = 0.1;

export class PrioritySelector implements TaskSelector {
  readonly name = 'priority';
  private calls = 0;
  readonly stats: SuccessStats;
  private readonly seed: number;
  private readonly prior: number;
  private readonly minWeight: number;
  constructor(
    private tasks: Task[],
    opts: SelectorOptions,
  ) {
    this.seed = opts.seed ?? 0;
    this.prior = opts.priorSuccessRate ?? 0.5;
    this.minWeight = opts.minWeight ?? PRIORITY_FLOOR;
    this.stats = new SuccessStats(opts.successThreshold);
  }

  weight(t: Task): number {
    return Math.max(this.minWeight, 1 - (this.stats.rate(t.id) ?? this.prior));
  }

  next(n: number): Task[] {
    if (this.tasks.length === 0) return [];
    const rng = new Rng(callSeed(this.seed, this.calls++));
    let weights = this.tasks.map((t) => this.weight(t));
    if (!weights.some((w) => w > 0)) weights = weights.map(() => 1); // everything solved: fall back to uniform
    const out: Task[] = [];
    while (out.length < n) {
      const keyed: [number, number][] = [];
      weights.forEach((w, i) => w > 0 && keyed.push([Math.log(Math.max(rng.next(), 1e-300)) / w, i]));
      keyed.sort((a, b) => b[0] - a[0]);
      for (const [, i] of keyed.slice(0, n - out.length)) out.push(this.tasks[i]!);
    }
    return out;
  }
  update(stats: Parameters<TaskSelector['update']>[0]): void {
    this.stats.update(stats);
  }
  setTasks(tasks: Task[]): void {
    this.tasks = tasks;
  }
  state(): SelectorState {
    return { name: this.name, calls: this.calls, stats: this.stats.toJSON() };
  }
  restore(s: SelectorState): void {
    this.calls = Number(s.calls ?? 0);
    this.stats.load(s.stats);
  }
}
