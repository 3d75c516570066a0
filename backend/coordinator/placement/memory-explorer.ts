// The explorer of placement `memory` when it overlaps the trainer (synchronizer.schedule one_step_off or
// async, or sync_offset >= 1). One Node process: the real concurrency is the rollout workers (worker
// threads, each with its own copy of the weights) generating while the trainer trains on the main
// thread; the explorer driver (explorer/explorer-loop.ts, the one every placement runs) only hands them
// steps. The trainer puts each new version into the workers as it publishes it (a consistent copy: no
// optimiser step runs during that copy), so the driver's weights are shared, never loaded. What bounds it:
// - sync_offset k: explore step t waits until the trainer has version >= t - k (waiting for weights,
//   counted as explorer_idle, as the child-process explorer counts it);
// - async: no version is waited for; step t may start while t - (trainer version) <= max_staleness
//   (rows further ahead would only go stale in the buffer): that wait is the buffer being full, not
//   weights, counted apart as explorer_backpressure.
import type { SyncedRolloutModel } from '../../explorer/rollout-engine.js';
import type { MetricsLog } from '../monitor.js';
import type { FillingExplorer } from '../../explorer/filling-explorer.js';
import { runExplorerLoop, sharedWeights } from '../../explorer/explorer-loop.js';
import { requiredVersion } from '../sync-plan.js';

export type OverlapGate = { kind: 'offset'; offset: number } | { kind: 'async'; lead: number };

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
  const { explorer, pool: p, metrics, stageName, gate } = o;
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
  const stageStartVersion = o.trainerVersion();
  // The trainer publishes every step into the workers (sync_interval 1); async waits for no version.
  const plan = { interval: 1, offset: gate.kind === 'offset' ? gate.offset : Infinity, stageStartVersion };
  st.done = runExplorerLoop({
    explorer,
    // Explore steps are numbered by the trainer step they feed: a stage that starts after steps the
    // explorer never made (a warm-up that does not explore) starts at the trainer's version.
    target: Math.max(explorer.step, stageStartVersion),
    requiredVersion: (t) => requiredVersion(t, plan),
    ...(gate.kind === 'async' ? { lead: gate.lead } : {}),
    ...sharedWeights(o.trainerVersion, () => p),
    onMetrics: (rec) => {
      if (rec.kind === 'state')
        st.last = { idle: Number(rec.explorer_idle) || 0, backpressure: Number(rec.explorer_backpressure) || 0 };
      metrics.write({ stage: stageName, ...rec, ...(rec.kind === 'explore' ? { rollout: p.metrics() } : {}) });
    },
    signal: stop.signal,
  }).then(
    () => undefined,
    (e: unknown) => {
      st.error = e;
      o.trainerStop.abort();
    },
  );
  return st;
}
