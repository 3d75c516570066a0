// The explorer process's loop (synchronizer `checkpoint`): before each explore step, pick up the
// newest published checkpoint; the step that feeds trainer step t waits until a checkpoint of at
// least requiredVersion(t) exists, so the explorer never runs more than sync_offset versions ahead.
import { StateClock, type ComponentState } from '../core/component-state.js';
import type { Explorer, ExploreMetrics } from './explorer.js';
import type { RolloutModel } from './workflow.js';

export interface PublishedWeights {
  version: number;
  path: string;
}

export interface ExplorerLoopOptions {
  explorer: Explorer;
  /** The trainer step the next explore step feeds. */
  target: number;
  requiredVersion(target: number): number;
  latest(): Promise<PublishedWeights | null>;
  /** Load a checkpoint as a rollout model (the loop disposes the previous one through `release`). */
  load(w: PublishedWeights): Promise<RolloutModel>;
  release?(m: RolloutModel): void;
  /** Called after a step's experiences are in the buffer. */
  onStep?(nextTarget: number, m: ExploreMetrics): Promise<void> | void;
  onMetrics(rec: Record<string, unknown>): void;
  onState?(state: ComponentState, detail?: string): void;
  /** Stop after this many explore steps (tests, explore-only runs); default: until aborted. */
  maxSteps?: number;
  pollMs?: number;
  signal?: AbortSignal;
}

export async function runExplorerLoop(o: ExplorerLoopOptions): Promise<{ target: number; idle: number }> {
  const clock = new StateClock(o.onState);
  let model: RolloutModel | null = null;
  let target = o.target;
  let done = 0;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  try {
    while (!o.signal?.aborted && (o.maxSteps === undefined || done < o.maxSteps)) {
      const need = o.requiredVersion(target);
      const latest = await o.latest();
      if (latest && (!model || latest.version > model.version)) {
        clock.set('syncing', `v${latest.version}`);
        try {
          const next = await o.load(latest);
          if (model) o.release?.(model);
          model = next;
        } catch (e) {
          // A checkpoint pruned between listing and loading: the next poll sees a newer one.
          o.onMetrics({ kind: 'event', component: 'explorer', message: `could not load v${latest.version}: ${(e as Error).message}` });
        }
      }
      if (!model || model.version < need) {
        clock.set('waiting', `weights v${need} for step ${target}`);
        await sleep(o.pollMs ?? 25);
        continue;
      }
      clock.set('generating', `step ${target} with v${model.version}`);
      o.explorer.step = target;
      const m = await o.explorer.exploreStep(model);
      target++;
      done++;
      await o.onStep?.(target, m);
      const snap = clock.snapshot();
      o.onMetrics({ kind: 'explore', component: 'explorer', step: target - 1, ...m, tokens_per_s: m.tokens / Math.max(1e-9, m.rollout_s), ahead: target - 1 - model.version });
      o.onMetrics({ kind: 'state', component: 'explorer', step: target - 1, explorer_idle: snap.idle, ...Object.fromEntries(Object.entries(snap).map(([k, v]) => ['explorer_' + k, v])) });
    }
  } finally {
    if (model) o.release?.(model);
    clock.set('stopped');
  }
  return { target, idle: clock.snapshot().idle };
}
