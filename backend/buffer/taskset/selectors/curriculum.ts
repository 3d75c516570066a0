// Curriculum: tasks ordered easy -> hard by difficulty (from the taskset, else 1 - observed success
// rate, else 0.5); step s samples from a window that grows (or slides) towards the hard end
// over `rampSteps` calls of next().
import { InputError } from '../../../core/errors.js';
import { Rng } from '../../../core/rng.js';
import type { Task } from '../../../core/types.js';
import { SuccessStats, callSeed } from './stats.js';
import type { SelectorOptions, SelectorState, TaskSelector } from './types.js';

export class CurriculumSelector implements TaskSelector {
  readonly name = 'curriculum';
  private step = 0;
  private sorted: Task[] = [];
  readonly stats: SuccessStats;
  private readonly seed: number;
  private readonly start: number;
  private readonly ramp: number;
  private readonly slide: boolean;
  constructor(
    private tasks: Task[],
    opts: SelectorOptions,
  ) {
    this.seed = opts.seed ?? 0;
    this.start = opts.startFraction ?? 0.2;
    this.ramp = opts.rampSteps ?? 100;
    this.slide = opts.slide ?? false;
    if (!(this.start > 0 && this.start <= 1))
      throw new InputError(`curriculum: startFraction must be in (0, 1], got ${this.start}`);
    if (!(this.ramp > 0)) throw new InputError(`curriculum: rampSteps must be > 0, got ${this.ramp}`);
    this.stats = new SuccessStats(opts.successThreshold);
    this.sort();
  }

  difficulty(t: Task): number {
    if (t.difficulty !== undefined) return t.difficulty;
    const r = this.stats.rate(t.id);
    return r === undefined ? 0.5 : 1 - r;
  }
  private sort(): void {
    const d = new Map(this.tasks.map((t) => [t.id, this.difficulty(t)]));
    this.sorted = [...this.tasks].sort((a, b) => d.get(a.id)! - d.get(b.id)!); // stable: file order breaks ties
  }

  /** Tasks available at the current step, easiest first. */
  window(): Task[] {
    const n = this.sorted.length;
    const progress = Math.min(1, this.step / this.ramp);
    if (this.slide) {
      const size = Math.max(1, Math.ceil(this.start * n));
      const lo = Math.round((n - size) * progress);
      return this.sorted.slice(lo, lo + size);
    }
    const frac = this.start + (1 - this.start) * progress;
    return this.sorted.slice(0, Math.max(1, Math.ceil(frac * n)));
  }

  next(n: number): Task[] {
    if (this.sorted.length === 0) return [];
    const pool = this.window();
    const rng = new Rng(callSeed(this.seed, this.step++));
    const out: Task[] = [];
    while (out.length < n) out.push(...rng.shuffle([...pool]).slice(0, n - out.length));
    return out;
  }
  update(stats: Parameters<TaskSelector['update']>[0]): void {
    this.stats.update(stats);
    this.sort();
  }
  setTasks(tasks: Task[]): void {
    this.tasks = tasks;
    this.sort();
  }
  state(): SelectorState {
    return { name: this.name, step: this.step, stats: this.stats.toJSON() };
  }
  restore(s: SelectorState): void {
    this.step = Number(s.step ?? 0);
    this.stats.load(s.stats);
    this.sort();
  }
}
