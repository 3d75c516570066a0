// The one explorer driver (every placement but the distributed lease loop runs its explore steps
// here): before each explore step, pick up the newest weights; the step that feeds trainer step t waits
// until weights of at least requiredVersion(t) exist, so the explorer never runs more than sync_offset
// versions ahead. Where the weights come from is the caller's: published checkpoints (the explorer
// process loads each one), or a model the trainer updates in place (`sharedWeights`: the memory
// placement's rollout workers in lockstep or beside the trainer, and explore mode's fixed model).
// Async (no version required): `lead` bounds it instead. Step t waits while t - (newest published
// version) > lead: its rows would go stale before the trainer reached them. That wait is for the
// trainer's progress, not for weights, and is counted apart (backpressure). One exception keeps the run
// live: when the trainer is stuck waiting for a batch (its rows never came: partial rollouts that only
// later steps finish, rows rejected by feedback), the step starts anyway and is marked `starved` (what
// it makes is taken at once, not left to go stale).
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
  /**
   * Async: the most steps the next explore step may be ahead of the newest published version
   * (buffer.max_staleness); unset: no bound but requiredVersion.
   */
  lead?: number;
  /** With `lead`: whether the trainer is waiting for a batch it cannot get (nothing fresh for version `published` in the buffer). */
  trainerStarved?(published: number): Promise<boolean>;
  /** Stop after this many explore steps (tests, explore-only runs); default: until aborted. */
  maxSteps?: number;
  pollMs?: number;
  signal?: AbortSignal;
}

/**
 * Weights the trainer updates in place (the memory placement): the newest are whatever `model()` holds
 * now, at version `version()`; nothing is loaded or released.
 */
export function sharedWeights(
  version: () => number,
  model: () => RolloutModel | Promise<RolloutModel>,
): Pick<ExplorerLoopOptions, 'latest' | 'load'> {
  return { latest: async () => ({ version: version(), path: '' }), load: async () => model() };
}

/** Why explore step `target` may not start yet under an async lead, or null when it may. */
export function leadWait(target: number, published: number | undefined, lead: number | undefined): 'bound' | null {
  if (lead === undefined || published === undefined) return null;
  return target - published > lead ? 'bound' : null;
}

/** Polls in a row that must see the trainer starved before a step starts past the bound (its state line is written a moment after it takes a batch). */
const STARVED_POLLS = 2;

export async function runExplorerLoop(
  o: ExplorerLoopOptions,
): Promise<{ target: number; idle: number; backpressure: number }> {
  const clock = new StateClock(o.onState);
  let model: RolloutModel | null = null;
  let target = o.target;
  let done = 0;
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
  // Time in the 'waiting' state, by cause: for weights (explorer_idle) or under the lead bound
  // (explorer_backpressure). Timestamps inside the clock's own (closed before it switches, opened
  // after): never more than its waiting time.
  const waited = { weights: 0, bound: 0 };
  let waiting: { why: 'weights' | 'bound'; since: number } | null = null;
  const set = (state: ComponentState, detail?: string, why?: 'weights' | 'bound') => {
    if (waiting && !(state === 'waiting' && why === waiting.why)) {
      waited[waiting.why] += performance.now() - waiting.since;
      waiting = null;
    }
    clock.set(state, detail);
    if (state === 'waiting' && why && !waiting) waiting = { why, since: performance.now() };
  };
  const fractions = () => {
    const open = (why: 'weights' | 'bound') =>
      (waited[why] + (waiting?.why === why ? performance.now() - waiting.since : 0)) / 1000;
    const snap = clock.snapshot();
    const el = Math.max(1e-9, snap.elapsed_s);
    const bound = open('bound');
    return { snap, idle: open('weights') / el, backpressure: bound / el, backpressure_s: bound };
  };
  let starvedPolls = 0;
  try {
    while (!o.signal?.aborted && (o.maxSteps === undefined || done < o.maxSteps)) {
      const need = o.requiredVersion(target);
      const latest = await o.latest();
      if (latest && (!model || latest.version > model.version)) {
        set('syncing', `v${latest.version}`);
        try {
          const next = await o.load(latest);
          if (model) o.release?.(model);
          model = next;
        } catch (e) {
          // A checkpoint pruned between listing and loading: the next poll sees a newer one.
          o.onMetrics({
            kind: 'event',
            component: 'explorer',
            message: `could not load v${latest.version}: ${(e as Error).message}`,
          });
        }
      }
      if (!model || model.version < need) {
        set('waiting', `weights v${need} for step ${target}`, 'weights');
        await sleep(o.pollMs ?? 25);
        continue;
      }
      let starved = false;
      if (leadWait(target, latest?.version, o.lead)) {
        starvedPolls = (await o.trainerStarved?.(latest!.version)) ? starvedPolls + 1 : 0;
        if (starvedPolls < STARVED_POLLS) {
          set(
            'waiting',
            `step ${target} is more than ${o.lead} ahead of v${latest!.version}: waiting for the trainer`,
            'bound',
          );
          await sleep(o.pollMs ?? 25);
          continue;
        }
        starved = true;
      }
      starvedPolls = 0;
      set(
        'generating',
        `step ${target} with v${model.version}${starved ? ' (past the bound: the trainer has nothing to take)' : ''}`,
      );
      o.explorer.step = target;
      // The weights the step's rows are labelled with: shared weights the trainer updates during the
      // step reach the rollout workers before their next job, so this step's samples are all of this one.
      const version = model.version;
      const m = await o.explorer.exploreStep(model);
      target++;
      done++;
      await o.onStep?.(target, m);
      const f = fractions();
      o.onMetrics({
        kind: 'explore',
        component: 'explorer',
        step: target - 1,
        ...m,
        model_version: version,
        tokens_per_s: m.tokens / Math.max(1e-9, m.rollout_s),
        ahead: target - 1 - version,
        ...(starved ? { starved: true } : {}),
      });
      // explorer_idle: waiting for weights; explorer_backpressure: waiting for the trainer under the lead bound (both within explorer_waiting_s).
      o.onMetrics({
        kind: 'state',
        component: 'explorer',
        step: target - 1,
        ...Object.fromEntries(Object.entries(f.snap).map(([k, v]) => ['explorer_' + k, v])),
        explorer_idle: f.idle,
        ...(o.lead !== undefined
          ? { explorer_backpressure: f.backpressure, explorer_backpressure_s: f.backpressure_s }
          : {}),
      });
    }
  } finally {
    if (model) o.release?.(model);
    set('stopped');
  }
  const f = fractions();
  return { target, idle: f.idle, backpressure: f.backpressure };
}
