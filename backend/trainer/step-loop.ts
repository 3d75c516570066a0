// The trainer step loop of every placement (run-loop.ts runs it once per stage): sample a batch for
// step t from the buffer (explored first by the placement's `explore`, in one process), train, and
// every sync_interval steps publish the weights (`publish`: the placement's checkpoint). The step
// number is the sampler's consumer step, so a trainer restarted from checkpoint v(t) asks for the same steps
// again and gets the recorded batches back instead of taking new experiences.
import { setImmediate as turn } from 'node:timers/promises';
import type { Experience } from '../core/types.js';
import { StateClock, type ComponentActivity } from '../core/component-state.js';
import { SampleTimeoutError, type Sampler } from '../buffer/sampler/index.js';
import { logger } from '../core/log.js';

const log = logger('trainer');
import type { StepMetrics } from './trainer.js';
import { maskStaleSegments } from './batch.js';

export interface TrainerLoopOptions {
  trainer: { trainStep(exps: Experience[], modelVersion: number, progress?: number): Promise<StepMetrics> };
  sampler: Sampler;
  batchSize: number;
  /** Trainer steps done before this loop (= the model version it starts from). */
  step: number;
  /** Steps of the current stage already done. */
  stageStep: number;
  /** Stage bounds: a number of steps and/or a wall-clock budget (counted from this loop's start). */
  steps?: number;
  wallSeconds?: number;
  syncInterval: number;
  /** Write checkpoint v(step) and record it; `stageDone` marks the end of the stage. */
  publish(version: number, stageStep: number, stageDone: boolean): Promise<void>;
  onMetrics(rec: Record<string, unknown>): void;
  onState?(state: ComponentActivity, detail?: string): void;
  /** After each step (and its publish, if any): e.g. a periodic evaluation (monitor.eval_every). */
  afterStep?(step: number, stageStep: number): Promise<void>;
  /**
   * Before each step's read, where the placement makes that step's experiences itself (one process:
   * explore now with the current weights). Returns the step's batch size, or null when the step
   * produced nothing trainable (the loop checks its bounds and tries again). Without it another
   * process or machine feeds the buffer and the read waits for it.
   */
  explore?(step: number, stageStep: number): Promise<number | null>;
  /** Fields added to each step's `state` record (e.g. the explorer's idle fraction in one process). */
  stateExtra?(): Record<string, unknown>;
  /** Per blocking read; a run whose explorer died must not hang forever. */
  sampleTimeoutMs?: number;
  /**
   * Partial rollouts, loss_segments fresh: only segments sampled within this many versions of the
   * step's weights count in the loss (older segments of a finished trajectory are masked).
   */
  freshSegments?: number;
  signal?: AbortSignal;
  /**
   * Nothing writes the buffer while the stage trains (buffer.train_from: another run's rows, copied
   * in): a read that finds no whole batch ends the stage, said in the log and in an `out_of_rows`
   * record, instead of waiting for rows that never come.
   */
  finiteBuffer?: boolean;
  /** The clock of the wall-clock budget (default Date.now; a test's own clock). */
  now?: () => number;
}

export interface TrainerLoopResult {
  step: number;
  stageStep: number;
  stageDone: boolean;
  idle: number;
}

export async function runTrainerLoop(o: TrainerLoopOptions): Promise<TrainerLoopResult> {
  const clock = new StateClock(o.onState);
  const now = o.now ?? Date.now;
  const t0 = now();
  let step = o.step;
  let s = o.stageStep;
  const boundReached = () =>
    (o.steps !== undefined && s >= o.steps) || (o.wallSeconds !== undefined && (now() - t0) / 1000 >= o.wallSeconds);
  // The one decision that the stage is over, made once per round and kept: the loop's exit, the
  // stage-done mark of the checkpoint published after it and the result all read this value. (Asking
  // the clock again after a publish let a budget that ran out during it end the loop behind a
  // checkpoint marked not done, and the coordinator ran the stage a second time.)
  let done = boundReached(); // a stage resumed at its bound trains no further step
  // The version the loop starts from is already a checkpoint (the resume point it was loaded from).
  let last = { version: step, done: false };
  const publish = async (stageDone: boolean) => {
    clock.set('syncing', `v${step}`);
    await o.publish(step, s, stageDone);
    last = { version: step, done: stageDone };
  };
  while (!done && !o.signal?.aborted) {
    clock.set('waiting', `batch for step ${step}`);
    let batchSize = o.batchSize;
    if (o.explore) {
      // The trainer waits while this process explores (its idle time, as when another process does).
      const n = await o.explore(step, s);
      if (n === null) {
        // Nothing trainable: no step, but the budget may have run out meanwhile. One turn of the
        // event loop first: a retry made of synchronous work would starve the stop signal and timers.
        await turn();
        done = boundReached();
        continue;
      }
      batchSize = n;
    }
    let batch;
    try {
      // A finite buffer is read once (a recorded batch is still replayed): waiting cannot help.
      batch = await o.sampler.sample({
        batchSize,
        currentVersion: step,
        step,
        timeoutMs: o.finiteBuffer ? 0 : (o.sampleTimeoutMs ?? 600_000),
        signal: o.signal,
      });
    } catch (e) {
      if (o.signal?.aborted) break;
      if (o.finiteBuffer && e instanceof SampleTimeoutError) {
        log.warn(`out of rows after ${s} step(s) of the stage: ${e.status.message}; the stage ends`);
        o.onMetrics({ kind: 'out_of_rows', step, stage_step: s, needed: e.status.needed, ready: e.status.ready });
        done = true;
        break;
      }
      throw e;
    }
    clock.set('training', `step ${step}`);
    const fresh =
      o.freshSegments === undefined ? undefined : maskStaleSegments(batch.experiences, step - o.freshSegments);
    const tm = await o.trainer.trainStep(
      fresh?.experiences ?? batch.experiences,
      step,
      stageProgress(o, s, (now() - t0) / 1000),
    );
    step++;
    s++;
    const usual = batch.experiences.filter((e) => e.source === 'usual');
    o.onMetrics({
      kind: 'train',
      ...tm,
      step: step - 1,
      model_version: step,
      replayed: batch.replayed,
      waited_s: batch.waitedMs / 1000,
      data_version_min: usual.length ? Math.min(...usual.map((e) => e.modelVersion)) : null,
      ...expertUse(batch.experiences),
      ...(fresh ? { stale_segment_tokens: fresh.masked } : {}),
    });
    done = boundReached();
    if (done || step % o.syncInterval === 0) await publish(done);
    if (o.afterStep) {
      clock.set('training', `evaluating after step ${step - 1}`);
      await o.afterStep(step, s);
    }
    const snap = clock.snapshot();
    o.onMetrics({
      kind: 'state',
      component: 'trainer',
      step: step - 1,
      trainer_idle: snap.idle,
      ...prefix('trainer_', snap),
      ...o.stateExtra?.(),
    });
  }
  // The stage's end is published exactly once, whichever way the loop ended: a round that trained
  // nothing (or none at all) still marks the current version done; a stop between syncs still
  // leaves a resume point at the current step.
  if (last.version !== step || last.done !== done) await publish(done);
  clock.set('stopped');
  return { step, stageStep: s, stageDone: done, idle: clock.snapshot().idle };
}

/** How far a stage is (0..1): its steps done or its wall-clock budget used, whichever is further. */
export function stageProgress(
  bounds: { steps?: number; wallSeconds?: number },
  stageStep: number,
  elapsedS: number,
): number {
  const bySteps = bounds.steps ? stageStep / bounds.steps : 0;
  const byTime = bounds.wallSeconds ? elapsedS / bounds.wallSeconds : 0;
  return Math.min(1, Math.max(bySteps, byTime));
}

/**
 * How a step used the expert set, which the expert share cycles through (buffer/sampler/expert.ts):
 * expert_unique, its distinct expert rows (fewer than expert_rows when the share repeats a small set);
 * expert_epoch, the pass over the set it reached (the highest use count among them: 1 = first pass).
 */
export function expertUse(exps: Experience[]): { expert_unique: number; expert_epoch: number } | Record<string, never> {
  const experts = exps.filter((e) => e.source === 'expert');
  if (!experts.length) return {};
  return {
    expert_unique: new Set(experts.map((e) => e.id)).size,
    expert_epoch: Math.max(...experts.map((e) => e.useCount)),
  };
}

function prefix(p: string, o: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [p + k, v]));
}
