// Tasks in file order, wrapping around.
import type { Task } from '../../../core/types.js';
import type { SelectorState, TaskSelector } from './types.js';

export class SequentialSelector implements TaskSelector {
  readonly name = 'sequential';
  private cursor = 0;
  constructor(private tasks: Task[]) {}

  next(n: number): Task[] {
    const out: Task[] = [];
    if (this.tasks.length === 0) return out;
    for (let k = 0; k < n; k++) {
      out.push(this.tasks[this.cursor % this.tasks.length]!);
      this.cursor = (this.cursor + 1) % this.tasks.length;
    }
    return out;
  }
  update(): void {}
  setTasks(tasks: Task[]): void {
    this.tasks = tasks;
    if (this.cursor >= tasks.length) this.cursor = 0;
  }
  state(): SelectorState {
    return { name: this.name, cursor: this.cursor };
  }
  restore(s: SelectorState): void {
    this.cursor = Number(s.cursor ?? 0);
  }
}
