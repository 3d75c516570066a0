// The explorer every placement runs: an Explorer that refills a step until it holds the trainer's
// batch (coordinator/explorer-half.ts builds it for a run).
import { setImmediate as turn } from 'node:timers/promises';
import { logger } from '../core/log.js';
import { Explorer, type ExploreMetrics } from './explorer.js';
import type { RolloutModel } from './workflow.js';
import { noTrainableStep, type NoTrainableStep } from './no-trainable.js';

const log = logger('explorer');

/**
 * An explorer whose step yields at least `need` trainable experiences: when the experience pipeline
 * filters a step's groups away (reward_filter drop_zero_variance, invalid samples), the same step is
 * explored again with the same weights until it has, or `signal` aborts. The trainer of the
 * child-processes placement waits for a full batch of the step, so an explorer that moved on with less
 * would leave it waiting for data that never comes (the next step needs the trainer's new weights);
 * one process in lockstep sets `need` to what the buffer lacks of the step's batch.
 */
export class FillingExplorer extends Explorer {
  need = 0;
  signal?: AbortSignal;
  /** Rounds between warnings that the pipeline drops most samples. */
  warnEvery = 8;
  /** Rounds in a row in which every sample was an infra failure (workers that cannot start, an endpoint down) before the step fails. */
  maxFailedRounds = 32;
  /**
   * Rounds in a row that add no trainable row (every group filtered, e.g. equal rewards under
   * drop_zero_variance, or every sample invalid) before the step gives up: a collapsed policy or a reward
   * with no spread would otherwise refill the same step forever. 20 rounds: a short run of unlucky draws
   * refills past it, while a spin ends within seconds of tiny-model sampling.
   */
  maxBarrenRounds = 20;
  /** Told when the step gives up on maxBarrenRounds (the placement ends the run, stopped); unset: the step throws. */
  onNoTrainable?: (w: NoTrainableStep) => void;

  /** A fixed `seed` is the first round's; refill rounds draw their own (the same seed would repeat its samples). */
  override async exploreStep(model: RolloutModel, o: { seed?: number } = {}): Promise<ExploreMetrics> {
    const step = this.step;
    let m = await super.exploreStep(model, o);
    let failed = allFailed(m) ? 1 : 0;
    let barren = m.trainable === 0 && !failed ? m : undefined;
    let barrenRounds = barren ? 1 : 0;
    for (let round = 1; m.trainable < this.need && !this.signal?.aborted; round++) {
      // One turn of the event loop per round: in-process sampling and the SQLite buffer are
      // synchronous, so without it a refill that never fills starved the stop signal, timers
      // (wall-clock limits, timeouts) and the server's requests.
      await turn();
      if (this.signal?.aborted) break;
      // Refilling cannot help when nothing can be sampled at all: fail instead of spinning forever.
      if (failed >= this.maxFailedRounds)
        throw new Error(
          `explore step ${step}: every sample of ${failed} rounds in a row was an infra failure (the rollout model cannot sample, or the reward cannot score; the experiences' status_reason says why)${m.infra_reason ? `; the latest: ${m.infra_reason.slice(0, 400)}` : ''}`,
        );
      // Nor when the pipeline drops every sample the policy makes: give up, saying why.
      if (barren && barrenRounds >= this.maxBarrenRounds) {
        const w = noTrainableStep(step, barrenRounds, barren);
        if (!this.onNoTrainable) throw new Error(w.message);
        log.warn(w.message);
        this.onNoTrainable(w);
        break;
      }
      if (round % this.warnEvery === 0)
        log.warn(
          `step ${step}: ${m.trainable} of ${this.need} trainable experience(s) after ${round} rounds (the experience pipeline drops most samples)`,
        );
      this.step = step;
      const more = await super.exploreStep(model);
      failed = allFailed(more) ? failed + 1 : 0;
      // Rounds of nothing but infra failures have their own bound (above) and status.
      if (more.trainable > 0 || failed) [barren, barrenRounds] = [undefined, 0];
      else [barren, barrenRounds] = [barren ? sum(barren, more) : more, barrenRounds + 1];
      m = sum(m, more);
    }
    this.cutShort = m.trainable < this.need && this.signal?.aborted === true;
    return m;
  }
}

function allFailed(m: ExploreMetrics): boolean {
  return m.experiences > 0 && m.infra_failure === m.experiences;
}

function sum(a: ExploreMetrics, b: ExploreMetrics): ExploreMetrics {
  const ok = a.ok + b.ok;
  return {
    ...a,
    experiences: a.experiences + b.experiences,
    reward_mean: ok ? (a.reward_mean * a.ok + b.reward_mean * b.ok) / ok : 0,
    ok,
    trainable: a.trainable + b.trainable,
    invalid: a.invalid + b.invalid,
    infra_failure: a.infra_failure + b.infra_failure,
    // The latest reason: after a breaker tripped (user-code/host.ts) it names the file given up on.
    ...((b.infra_reason ?? a.infra_reason) ? { infra_reason: b.infra_reason ?? a.infra_reason } : {}),
    rollout_s: a.rollout_s + b.rollout_s,
    tokens: a.tokens + b.tokens,
  };
}
