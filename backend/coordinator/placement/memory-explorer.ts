// The explorer of placement `memory` when it overlaps the trainer (synchronizer.mode one_step_off or
// async, or sync_offset >= 1). One Node process: the real concurrency is the rollout workers (worker
// threads, each with its own copy of the weights) generating while the trainer trains on the main
// thread; this loop only hands them steps. The trainer puts each new version into the workers as it
// publishes it (a consistent copy: no optimiser step runs during that copy), so this loop never loads
// weights itself. What bounds it:
// - sync_offset k: explore step t waits until the trainer has version >= t - k (waiting for weights,
//   counted as explorer_idle, as the child-process explorer counts it);
// - async: no version is waited for; step t may start while t - (trainer version) <= max_staleness
//   (rows further ahead would only go stale in the buffer): that wait is the buffer being full, not
//   weights, counted apart as explorer_backpressure.
import type { ExploreMetrics } from '../../explorer/explorer.js';
import type { SyncedRolloutModel } from '../../explorer/rollout-engine.js';
import type { RolloutModel } from '../../explorer/workflow.js';
import type { MetricsLog } from '../monitor.js';
import type { FillingExplorer } from '../../explorer/filling-explorer.js';
import { requiredVersion } from '../sync-plan.js';

export type OverlapGate = { kind: 'offset'; offset: number } | { kind: 'async'; lead: number };

export interface OverlapExplorerOptions {
  explorer: FillingExplorer;
  /** Holds the newest published weights (the trainer sets them when it publishes). */
  model: RolloutModel;
  gate: OverlapGate;
  /** The trainer's current version (steps trained). */
  trainerVersion(): number;
  stageStartVersion: number;
  /** After each explore step: its metrics, how far it ran ahead of the trainer, and the idle fractions so far. */
  onStep(
    m: ExploreMetrics,
    info: { step: number; version: number; ahead: number; idle: number; backpressure: number; elapsed_s: number },
  ): Promise<void> | void;
  /** Stops the loop between steps (the step in flight finishes and is stored). */
  stop: AbortSignal;
  pollMs?: number;
}

export interface OverlapExplorerResult {
  steps: number;
  idle: number;
  backpressure: number;
}

/** Why step `target` may not start yet ('weights' or 'backpressure'), or null when it may. */
export function gateWait(
  gate: OverlapGate,
  target: number,
  trainerVersion: number,
  stageStartVersion: number,
): 'weights' | 'backpressure' | null {
  if (gate.kind === 'offset')
    return trainerVersion < requiredVersion(target, { interval: 1, offset: gate.offset, stageStartVersion })
      ? 'weights'
      : null;
  return target - trainerVersion > gate.lead ? 'backpressure' : null;
}

export async function runOverlapExplorer(o: OverlapExplorerOptions): Promise<OverlapExplorerResult> {
  const t0 = performance.now();
  let waitWeights = 0;
  let waitBuffer = 0;
  let steps = 0;
  const poll = o.pollMs ?? 5;
  const fractions = () => {
    const el = Math.max(1e-9, performance.now() - t0);
    return { idle: waitWeights / el, backpressure: waitBuffer / el, elapsed_s: el / 1000 };
  };
  // Explore steps are numbered by the trainer step they feed: a stage that starts after steps the
  // explorer never made (a warm-up that does not explore) starts at the trainer's version.
  o.explorer.step = Math.max(o.explorer.step, o.stageStartVersion);
  while (!o.stop.aborted) {
    const target = o.explorer.step;
    const why = gateWait(o.gate, target, o.trainerVersion(), o.stageStartVersion);
    if (why) {
      const w0 = performance.now();
      await new Promise((r) => setTimeout(r, poll));
      if (why === 'weights') waitWeights += performance.now() - w0;
      else waitBuffer += performance.now() - w0;
      continue;
    }
    // The weights the step's rows are labelled with (a version published during the step reaches the
    // workers before their next job, so this step's samples are all of it).
    const version = o.model.version;
    const m = await o.explorer.exploreStep(o.model);
    steps++;
    await o.onStep(m, { step: target, version, ahead: target - version, ...fractions() });
  }
  return { steps, idle: fractions().idle, backpressure: fractions().backpressure };
}

/** The overlapped explorer of one stage, running: stop it, await `done`, then throw `error` if set. */
export interface OverlapStage {
  pool: SyncedRolloutModel;
  stop: AbortController;
  /** The explorer's idle counters at its last step (the trainer's state records carry them). */
  last: { idle: number; backpressure: number };
  error: unknown;
  done: Promise<void>;
}

/**
 * Starts the overlapped explorer of a stage on rollout workers that hold the trainer's current weights:
 * its explore steps and their records (metrics.jsonl `explore`, `state`); a failure stops the trainer.
 */
export function startOverlapExplorer(o: {
  explorer: FillingExplorer;
  pool: SyncedRolloutModel;
  gate: OverlapGate;
  need: number;
  trainerVersion(): number;
  stageName: string;
  metrics: MetricsLog;
  trainerStop: AbortController;
}): OverlapStage {
  const { explorer, pool: p, metrics, stageName } = o;
  const stop = new AbortController();
  explorer.need = o.need;
  explorer.signal = stop.signal;
  const st: OverlapStage = {
    pool: p,
    stop,
    last: { idle: 0, backpressure: 0 },
    error: undefined,
    done: Promise.resolve(),
  };
  st.done = runOverlapExplorer({
    explorer,
    model: p,
    gate: o.gate,
    trainerVersion: o.trainerVersion,
    stageStartVersion: o.trainerVersion(),
    stop: stop.signal,
    onStep: (m, i) => {
      st.last = i;
      metrics.write({
        kind: 'explore',
        stage: stageName,
        step: i.step,
        ...m,
        model_version: i.version,
        tokens_per_s: m.tokens / Math.max(1e-9, m.rollout_s),
        ahead: i.ahead,
        rollout: p.metrics(),
      });
      metrics.write({
        kind: 'state',
        component: 'explorer',
        stage: stageName,
        step: i.step,
        explorer_idle: i.idle,
        explorer_backpressure: i.backpressure,
        explorer_elapsed_s: i.elapsed_s,
      });
    },
  }).then(
    () => undefined,
    (e: unknown) => {
      st.error = e;
      o.trainerStop.abort();
    },
  );
  return st;
}
