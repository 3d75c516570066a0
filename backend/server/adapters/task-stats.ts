// Per-task results of a buffer's usual experiences, kept up to date incrementally: each call
// scans only the rows appended since the last one (the store's keyset `scan`), so the taskset
// CodeLens can ask again after every few trainer steps without re-reading the whole buffer.
import type { Experience } from '../../core/types.js';
import type { TaskStats } from '../../core/protocol.js';
import type { ExperienceStore } from '../../buffer/storage/types.js';

interface Acc {
  n: number;
  sum: number;
  full: number;
}

/** A rollout counts as passed when it earned the full reward. */
export const FULL_REWARD = 1;

export class TaskStatsIndex {
  private afterSeq = 0;
  /** runId -> taskId -> running sums */
  private readonly byRun = new Map<string, Map<string, Acc>>();
  private pending: Promise<void> | undefined;

  constructor(private readonly store: Pick<ExperienceStore, 'scan'>) {}

  add(e: Experience): void {
    // Only the policy's own training rollouts: expert data, eval rollouts and infrastructure
    // failures (no reward at all) say nothing about how the model does on the task.
    if (e.source !== 'usual' || e.status !== 'ok' || e.split === 'eval') return;
    let tasks = this.byRun.get(e.runId);
    if (!tasks) this.byRun.set(e.runId, (tasks = new Map()));
    const a = tasks.get(e.taskId) ?? { n: 0, sum: 0, full: 0 };
    a.n++;
    a.sum += e.reward;
    if (e.reward >= FULL_REWARD) a.full++;
    tasks.set(e.taskId, a);
  }

  private async catchUp(): Promise<void> {
    for (;;) {
      const page = await this.store.scan(this.afterSeq, 1000);
      if (page.length === 0) return;
      for (const { seq, experience } of page) {
        this.afterSeq = seq;
        this.add(experience);
      }
    }
  }

  async stats(runId?: string): Promise<TaskStats[]> {
    // Concurrent callers share one catch-up scan.
    this.pending ??= this.catchUp().finally(() => (this.pending = undefined));
    await this.pending;
    const merged = new Map<string, Acc>();
    for (const [run, tasks] of this.byRun) {
      if (runId !== undefined && run !== runId) continue;
      for (const [id, a] of tasks) {
        const m = merged.get(id) ?? { n: 0, sum: 0, full: 0 };
        merged.set(id, { n: m.n + a.n, sum: m.sum + a.sum, full: m.full + a.full });
      }
    }
    return [...merged]
      .map(([taskId, a]) => ({ taskId, rollouts: a.n, meanReward: a.sum / a.n, passRate: a.full / a.n }))
      .sort((x, y) => (x.taskId < y.taskId ? -1 : 1));
  }
}
