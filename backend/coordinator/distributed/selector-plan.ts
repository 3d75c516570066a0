// Selectors that learn from outcomes (priority by 1 - success rate, curriculum) in a distributed run.
// The trainer plans the jobs, so it holds the run's TaskFeed (setup/tasks.ts, the same selector every
// placement uses): the tasks of step t are picked once, when t is first queued, and the feed is told
// the rewards of each trained batch. What was picked for which step and the selector's state are in
// the run's state, so a restarted trainer re-adds the same jobs (inserts are idempotent) and goes on
// learning where it stopped.
import type { Experience, Task } from '../../core/types.js';
import type { SelectorState } from '../../buffer/taskset/index.js';

interface Saved {
  selector: SelectorState;
  /** Trainer step -> the task ids picked for it (steps not trained yet). */
  planned: Record<string, string[]>;
}

export interface FeedLike {
  next(n: number): Task[];
  observe(exps: Experience[]): void;
  state(): SelectorState;
  restore(s: SelectorState | null | undefined): void;
}

export class PlannedSelector {
  private planned = new Map<number, string[]>();
  private readonly byId: Map<string, Task>;

  constructor(
    private readonly feed: FeedLike,
    tasks: Task[],
    private readonly tasksPerStep: number,
    private readonly save: (s: Saved) => Promise<void>,
  ) {
    this.byId = new Map(tasks.map((t) => [t.id, t]));
  }

  restore(s: Saved | null): void {
    if (!s) return;
    this.feed.restore(s.selector);
    this.planned = new Map(Object.entries(s.planned).map(([k, v]) => [Number(k), v]));
  }

  /** The tasks of step `target`: picked by the selector the first time, the same ones after. */
  async tasksFor(target: number): Promise<Task[]> {
    let ids = this.planned.get(target);
    if (!ids) {
      ids = this.feed.next(this.tasksPerStep).map((t) => t.id);
      this.planned.set(target, ids);
      await this.persist();
    }
    return ids.map((id) => this.byId.get(id)!).filter(Boolean);
  }

  /** A trained batch: its rollouts' rewards teach the selector; steps before it are forgotten. */
  async trained(step: number, exps: Experience[]): Promise<void> {
    this.feed.observe(exps);
    for (const t of this.planned.keys()) if (t <= step) this.planned.delete(t);
    await this.persist();
  }

  private persist(): Promise<void> {
    return this.save({
      selector: this.feed.state(),
      planned: Object.fromEntries([...this.planned].map(([k, v]) => [String(k), v])),
    });
  }
}
