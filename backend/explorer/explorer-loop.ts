// The one explorer driver (driveExplorer; every placement runs its explorer here): before each item of
// work, pick up the newest weights from a weights source; then take work from a gate. Two gates: jobs
// leased from a queue (the distributed explorer, coordinator/distributed/lease-gate.ts), and numbered
// explore steps (stepGate, runExplorerLoop), where the step that feeds trainer step t waits
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
import { StateClock, type ComponentActivity } from '../core/component-state.js';
import type { Explorer, ExploreMetrics } from './explorer.js';
import type { RolloutModel } from './workflow.js';

export interface PublishedWeights {
  version: number;
  path: string;
}

/** Where the weights come from: published checkpoints, a verified download, or the trainer's own model (sharedWeights). */
export interface WeightsSource<P extends PublishedWeights = PublishedWeights> {
  latest(): Promise<P | null>;
  /** Load published weights as a rollout model (the driver disposes the previous one through `release`). */
  load(w: P): Promise<RolloutModel>;
  release?(m: RolloutModel): void;
}

/** The numbered-step explorer: its weights source and the gate's parameters. */
export interface ExplorerLoopOptions extends WeightsSource {
  explorer: Explorer;
  /** The trainer step the next explore step feeds. */
  target: number;
  requiredVersion(target: number): number;
  /** Called after a step's experiences are in the buffer. */
  onStep?(nextTarget: number, m: ExploreMetrics): Promise<void> | void;
  onMetrics(rec: Record<string, unknown>): void;
  onState?(state: ComponentActivity, detail?: string): void;
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
export function sharedWeights(version: () => number, model: () => RolloutModel | Promise<RolloutModel>): WeightsSource {
  return { latest: async () => ({ version: version(), path: '' }), load: async () => model() };
}

/** Why explore step `target` may not start yet under an async lead, or null when it may. */
export function leadWait(target: number, published: number | undefined, lead: number | undefined): 'bound' | null {
  if (lead === undefined || published === undefined) return null;
  return target - published > lead ? 'bound' : null;
}

/** Polls in a row that must see the trainer starved before a step starts past the bound (its state line is written a moment after it takes a batch). */
const STARVED_POLLS = 2;

/** The numbered explore steps of a run (every placement but the distributed one): work item = trainer step fed. */
interface StepWork {
  target: number;
  starved: boolean;
}

/** The gate of numbered steps: step t waits for weights v >= requiredVersion(t) and, async, within the lead. */
function stepGate(o: ExplorerLoopOptions): ExplorerGate<StepWork> & { target: number } {
  let starvedPolls = 0;
  const g = {
    target: o.target,
    async take(model: RolloutModel | null, latest: PublishedWeights | null): Promise<StepWork[] | Wait> {
      const need = o.requiredVersion(g.target);
      if (!model || model.version < need) return { wait: 'weights', detail: `weights v${need} for step ${g.target}` };
      let starved = false;
      if (leadWait(g.target, latest?.version, o.lead)) {
        starvedPolls = (await o.trainerStarved?.(latest!.version)) ? starvedPolls + 1 : 0;
        if (starvedPolls < STARVED_POLLS)
          return {
            wait: 'bound',
            detail: `step ${g.target} is more than ${o.lead} ahead of v${latest!.version}: waiting for the trainer`,
          };
        starved = true;
      }
      starvedPolls = 0;
      return [{ target: g.target, starved }];
    },
    describe: (w: StepWork, model: RolloutModel) =>
      `step ${w.target} with v${model.version}${w.starved ? ' (past the bound: the trainer has nothing to take)' : ''}`,
    async run(w: StepWork, model: RolloutModel, clock: DriverClock): Promise<void> {
      o.explorer.step = w.target;
      // The weights the step's rows are labelled with: shared weights the trainer updates during the
      // step reach the rollout workers before their next job, so this step's samples are all of this one.
      const version = model.version;
      const m = await o.explorer.exploreStep(model);
      // Cut short by the stop: its rows stay, but the step is not done (a resume refills it).
      if (o.explorer.cutShort) return;
      g.target = w.target + 1;
      await o.onStep?.(g.target, m);
      const f = clock.fractions();
      o.onMetrics({
        kind: 'explore',
        component: 'explorer',
        step: w.target,
        ...m,
        model_version: version,
        tokens_per_s: m.tokens / Math.max(1e-9, m.rollout_s),
        ahead: w.target - version,
        ...(w.starved ? { starved: true } : {}),
      });
      // explorer_idle: waiting for weights; explorer_backpressure: waiting for the trainer under the lead bound (both within explorer_waiting_s).
      o.onMetrics({
        kind: 'state',
        component: 'explorer',
        step: w.target,
        ...Object.fromEntries(Object.entries(f.snap).map(([k, v]) => ['explorer_' + k, v])),
        explorer_idle: f.idle,
        ...(o.lead !== undefined
          ? { explorer_backpressure: f.backpressure, explorer_backpressure_s: f.backpressure_s }
          : {}),
      });
    },
  };
  return g;
}

/** The numbered-step explorer of every placement but the distributed one: the driver with stepGate. */
export async function runExplorerLoop(
  o: ExplorerLoopOptions,
): Promise<{ target: number; idle: number; backpressure: number }> {
  const gate = stepGate(o);
  const r = await driveExplorer({
    weights: o,
    gate,
    onLoadError: (version, e) =>
      o.onMetrics({ kind: 'event', component: 'explorer', message: `could not load v${version}: ${e.message}` }),
    ...(o.onState ? { onState: o.onState } : {}),
    ...(o.maxSteps !== undefined ? { maxRuns: o.maxSteps } : {}),
    ...(o.pollMs !== undefined ? { pollMs: o.pollMs } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
  });
  return { target: gate.target, idle: r.idle, backpressure: r.backpressure };
}

/** Why the explorer is not generating: no weights new enough (idle), the async lead bound (backpressure), no work planned yet. */
export type WaitCause = 'weights' | 'bound' | 'jobs';

export interface Wait {
  wait: WaitCause;
  detail: string;
  /** How long to wait before asking again (default: the driver's pollMs). */
  ms?: number;
  /** Ends the wait early (a notification that new weights or jobs exist). */
  wake?: Promise<void>;
}

/** The driver's time accounting, for a gate's metrics. */
export interface DriverClock {
  fractions(): {
    snap: ReturnType<StateClock['snapshot']>;
    idle: number;
    backpressure: number;
    backpressure_s: number;
  };
}

/**
 * Where an explorer's work comes from and how one item runs: numbered explore steps gated by the
 * weights' version (stepGate), or jobs leased from a queue (the distributed explorer).
 */
export interface ExplorerGate<W> {
  /** Whether the run is over (asked first in each round, before any weights are fetched). */
  done?(): Promise<boolean>;
  /** The work the model may do now, or why not yet. */
  take(model: RolloutModel | null, latest: PublishedWeights | null): Promise<W[] | Wait>;
  /**
   * Checked just before an item runs (a batch taken may wait a while): 'dropped' lets this one go (a
   * lost lease), 'abandon' it and the rest of the batch (the weights went stale meanwhile).
   */
  admit?(work: W, model: RolloutModel): Promise<'run' | 'dropped' | 'abandon'>;
  /** The generating state's detail for one item. */
  describe(work: W, model: RolloutModel): string;
  run(work: W, model: RolloutModel, clock: DriverClock): Promise<void>;
}

export interface DriverOptions<W, P extends PublishedWeights = PublishedWeights> {
  weights: WeightsSource<P>;
  gate: ExplorerGate<W>;
  /** Every change of state or detail; `trouble`: a weights source failing for 3 s, or a connection being waited out. */
  onState?(state: ComponentActivity, detail?: string, trouble?: 'error' | 'disconnected'): void;
  onLoadError?(version: number, e: Error): void;
  /** How long to wait after a failed load (default pollMs). */
  retryMs?: number;
  /** An error to wait out (a lost database connection): ms until the next try; undefined rethrows it. */
  recover?(e: unknown): number | undefined;
  /** Stop after this many items ran (tests, explore-only runs); default: until aborted or the gate stops. */
  maxRuns?: number;
  pollMs?: number;
  signal?: AbortSignal;
}

/** A failing weights source is reported as an error after this long (a checkpoint pruned mid-read is normal for a moment). */
const LOAD_FAILING_ERROR_MS = 3000;

/**
 * The one explorer driver: before each item, pick up the newest weights; then take work from the
 * gate and run it, or wait as the gate says. Time waiting is counted by cause.
 */
export async function driveExplorer<W, P extends PublishedWeights = PublishedWeights>(
  o: DriverOptions<W, P>,
): Promise<{ runs: number; idle: number; backpressure: number; waitedS: Record<WaitCause, number> }> {
  const clock = new StateClock();
  let model: RolloutModel | null = null;
  let runs = 0;
  const poll = o.pollMs ?? 25;
  // Time in the 'waiting' state, by cause. Timestamps inside the clock's own (closed before it
  // switches, opened after): never more than its waiting time.
  const waited: Record<WaitCause, number> = { weights: 0, bound: 0, jobs: 0 };
  let waiting: { why: WaitCause; since: number } | null = null;
  let last = '';
  const set = (state: ComponentActivity, detail?: string, why?: WaitCause, trouble?: 'error' | 'disconnected') => {
    if (waiting && !(state === 'waiting' && why === waiting.why)) {
      waited[waiting.why] += performance.now() - waiting.since;
      waiting = null;
    }
    clock.set(state);
    if (state === 'waiting' && why && !waiting) waiting = { why, since: performance.now() };
    const key = `${state}\n${detail ?? ''}\n${trouble ?? ''}`;
    if (key !== last) o.onState?.(state, detail, trouble);
    last = key;
  };
  const open = (why: WaitCause) => waited[why] + (waiting?.why === why ? performance.now() - waiting.since : 0);
  const driverClock: DriverClock = {
    fractions() {
      const snap = clock.snapshot();
      const el = Math.max(1e-9, snap.elapsed_s);
      const bound = open('bound') / 1000;
      return { snap, idle: open('weights') / 1000 / el, backpressure: bound / el, backpressure_s: bound };
    },
  };
  const sleep = (ms: number, wake?: Promise<void>) =>
    new Promise<void>((r) => {
      if (o.signal?.aborted) return r();
      const done = () => {
        clearTimeout(t);
        o.signal?.removeEventListener('abort', done);
        r();
      };
      const t = setTimeout(done, ms);
      o.signal?.addEventListener('abort', done, { once: true });
      void wake?.then(done);
    });
  let failingSince: number | null = null;
  try {
    work: while (!o.signal?.aborted && (o.maxRuns === undefined || runs < o.maxRuns)) {
      try {
        if (await o.gate.done?.()) break;
        const latest = await o.weights.latest();
        if (latest && (!model || latest.version > model.version)) {
          // While loads keep failing, the state keeps saying why instead of flicking back to syncing.
          if (failingSince === null) set('syncing', `v${latest.version}`);
          try {
            const next = await o.weights.load(latest);
            if (model) o.weights.release?.(model);
            model = next;
            failingSince = null;
          } catch (e) {
            failingSince ??= Date.now();
            o.onLoadError?.(latest.version, e as Error);
            const failing = Date.now() - failingSince >= LOAD_FAILING_ERROR_MS;
            set(
              'waiting',
              `weights v${latest.version}: ${(e as Error).message}`,
              'weights',
              failing ? 'error' : undefined,
            );
            await sleep(o.retryMs ?? poll);
            continue;
          }
        }
        const taken = await o.gate.take(model, latest);
        if (!Array.isArray(taken)) {
          set('waiting', taken.detail, taken.wait);
          await sleep(taken.ms ?? poll, taken.wake);
          continue;
        }
        for (const w of taken) {
          if (o.signal?.aborted) break work;
          const admitted = (await o.gate.admit?.(w, model!)) ?? 'run';
          if (admitted === 'abandon') break;
          if (admitted === 'dropped') continue;
          set('generating', o.gate.describe(w, model!));
          await o.gate.run(w, model!, driverClock);
          runs++;
        }
      } catch (e) {
        const ms = o.recover?.(e);
        if (ms === undefined) throw e;
        set('waiting', (e as Error).message, undefined, 'disconnected');
        await sleep(ms);
      }
    }
  } finally {
    if (model) o.weights.release?.(model);
    set('stopped');
  }
  const f = driverClock.fractions();
  return {
    runs,
    idle: f.idle,
    backpressure: f.backpressure,
    waitedS: { weights: open('weights') / 1000, bound: open('bound') / 1000, jobs: open('jobs') / 1000 },
  };
}
