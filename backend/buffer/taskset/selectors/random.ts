// Uniform sampling with replacement, seeded per call so the state is one counter.
import { Rng } from '../../../core/rng.js';
import type { Task } from '../../../core/types.js';
import { callSeed } from './stats.js';
import type { SelectorState, TaskSelector } from './types.js';

export class RandomSelector implements TaskSelector {
  readonly name = 'random';
  private calls = 0;
  constructor(
    private tasks: Task[],
    private readonly seed: number,
  ) {}

  next(n: number): Task[] {
    if (this.tasks.length === 0) return [];
    const rng = new Rng(callSeed(this.seed, this.calls++));
    return Array.from({ length: n }, () => rng.pick(this.tasks));
  }
  update(): void {}
  setTasks(tasks: Task[]): void {
    this.tasks = tasks;
  }
  state(): SelectorState {
    return { name: this.name, calls: this.calls };
  }
  restore(s: SelectorState): void {
    this.calls = Number(s.calls ?? 0);
  }
}
