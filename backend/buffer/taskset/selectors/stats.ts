// Per-task success counts shared by the selectors that learn from outcomes.
import type { TaskStat } from './types.js';

export interface Tally {
  attempts: number;
  successes: number;
}

export class SuccessStats {
  readonly byId = new Map<string, Tally>();
  constructor(private readonly threshold = 0.5) {}

  update(stats: TaskStat[]): void {
    for (const s of stats) {
      let attempts = 0;
      let successes = 0;
      if (s.rewards && s.rewards.length > 0) {
        attempts = s.rewards.length;
        successes = s.rewards.filter((r) => r >= this.threshold).length;
      } else if (s.successRate !== undefined) {
        if (!(s.successRate >= 0 && s.successRate <= 1))
          throw new Error(`task '${s.taskId}': successRate must be in [0, 1], got ${s.successRate}`);
        attempts = s.count ?? 1;
        successes = s.successRate * attempts;
      } else continue;
      const t = this.byId.get(s.taskId) ?? { attempts: 0, successes: 0 };
      t.attempts += attempts;
      t.successes += successes;
      this.byId.set(s.taskId, t);
    }
  }

  rate(id: string): number | undefined {
    const t = this.byId.get(id);
    return t && t.attempts > 0 ? t.successes / t.attempts : undefined;
  }

  toJSON(): Record<string, Tally> {
    return Object.fromEntries(this.byId);
  }

  load(j: unknown): void {
    this.byId.clear();
    for (const [id, t] of Object.entries((j ?? {}) as Record<string, Tally>))
      this.byId.set(id, { attempts: t.attempts, successes: t.successes });
  }
}

/** A fresh generator per (seed, call): resumable from a call counter alone. */
export function callSeed(seed: number, call: number): number {
  return (Math.imul(seed ^ 0x5bd1e995, 0x27d4eb2d) + Math.imul(call + 1, 0x165667b1)) >>> 0;
}
