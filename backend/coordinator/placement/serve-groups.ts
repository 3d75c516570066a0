// Rewarded episodes into the run's buffer. With a group advantage (GRPO, RLOO, ...) an episode waits
// for `groupSize` rewarded episodes of its task (metadata.task_id), whose advantages are computed
// together, as the explorer does for the `repeat_times` samples of a task; other algorithms'
// experiences are written at once. The rows waiting are kept across a stop (serve-endpoint.ts).
import type { Experience } from '../../core/types.js';
import { groupAdvantages, pipelineComputesAdvantages } from '../../trainer/resolve-algorithm.js';

export class GroupSink {
  private readonly waiting = new Map<string, Experience[]>();

  constructor(
    private readonly o: {
      groupSize: number;
      algorithm: () => { name: string; params: Record<string, unknown> };
      write: (exps: Experience[]) => Promise<void>;
    },
  ) {}

  /** The rows waiting for their group (rewarded, not yet written), kept across a stop and resume. */
  snapshot(): [string, Experience[]][] {
    return [...this.waiting];
  }

  restore(groups: [string, Experience[]][]): void {
    for (const [task, g] of groups) this.waiting.set(task, [...(this.waiting.get(task) ?? []), ...g]);
  }

  /** Rows waiting for the rest of their group. */
  get pending(): number {
    let n = 0;
    for (const g of this.waiting.values()) n += g.length;
    return n;
  }

  async add(exps: Experience[]): Promise<void> {
    const a = this.o.algorithm();
    if (!pipelineComputesAdvantages(a.name, a.params)) return this.o.write(exps);
    const ready: Experience[][] = [];
    for (const e of exps) {
      const g = [...(this.waiting.get(e.taskId) ?? []), e];
      if (g.length >= this.o.groupSize) {
        this.waiting.delete(e.taskId);
        // One group per batch of groupSize episodes: its own group id, as an explore step's.
        const gid = `${e.groupId}:${e.id}`;
        ready.push(g.map((x) => ({ ...x, groupId: gid })));
      } else this.waiting.set(e.taskId, g);
    }
    for (const g of ready) await this.o.write(groupAdvantages(a.name, g, a.params));
  }
}
