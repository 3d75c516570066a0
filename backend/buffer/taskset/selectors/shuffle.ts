// Every task once per epoch in a seeded order, reshuffled each epoch (a new order from (seed, epoch)).
import { Rng } from '../../../core/rng.js';
import type { Task } from '../../../core/types.js';
import { callSeed } from './stats.js';
import type { SelectorState, TaskSelector } from './types.js';

export class ShuffleSelector implements TaskSelector {
  readonly name = 'shuffle';
  private epoch = 0;
  private cursor = 0;
  private order: number[] = [];
  constructor(
    private tasks: Task[],
    private readonly seed: number,
  ) {
    this.reorder();
  }

  private reorder(): void {
    this.order = new Rng(callSeed(this.seed, this.epoch)).shuffle(this.tasks.map((_, i) => i));
  }
  next(n: number): Task[] {
    const out: Task[] = [];
    if (this.tasks.length === 0) return out;
    while (out.length < n) {
      if (this.cursor >= this.order.length) {
        this.epoch++;
        this.cursor = 0;
        this.reorder();
      }
      out.push(this.tasks[this.order[this.cursor++]!]!);
    }
    return out;
  }
  get currentEpoch(): number {
    return this.epoch;
  }
  update(): void {}
  setTasks(tasks: Task[]): void {
    // The rest of this epoch uses the new list: tasks already seen this epoch (by id) are not repeated.
    const seen = new Set(this.order.slice(0, this.cursor).map((i) => this.tasks[i]!.id));
    this.tasks = tasks;
    this.reorder();
    const rest = this.order.filter((i) => !seen.has(tasks[i]!.id));
    this.order = [...this.order.filter((i) => seen.has(tasks[i]!.id)), ...rest];
    this.cursor = this.order.length - rest.length;
  }
  state(): SelectorState {
    return { name: this.name, epoch: this.epoch, cursor: this.cursor };
  }
  restore(s: SelectorState): void {
    this.epoch = Number(s.epoch ?? 0);
    this.cursor = Number(s.cursor ?? 0);
    this.reorder();
  }
}
