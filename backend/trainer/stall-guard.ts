// Watches a stage's train records for a run that is not learning: the rollout reward (`batch_reward`)
// stays where it started while every update keeps changing the policy (`update_kl`, the KL between the
// policy before and after each step). The updates then go somewhere the reward does not reward, most
// often because the groups give no signal: a group whose rewards are all equal has zero advantage
// (`zero_variance_share`, trainer/group-spread.ts). Says it once per stage, with the numbers and what
// to try; never stops the run. A reward already near the top (nothing left to learn) is not a stall.
import type { RunWarning } from '../core/protocol.js';
import { StageWatch, mean, num, type Rec } from './stage-watch.js';

/** Steps of the stage before a stall can be named, and the window the recent figures average over. */
export const STALL_STEPS = 40;
/** Steps averaged for the start and the recent reward. */
export const STALL_WINDOW = 10;
/** A recent reward no more than this above the start's is flat. */
export const FLAT_GAIN = 0.05;
/** Mean update KL per token a step above which the policy is moving (auto keeps it near its target, 1e-2 by default). */
export const MOVING_KL = 1e-5;
/** A reward at or above this is near the top: flat because learned. */
export const SATURATED_REWARD = 0.95;

interface Row {
  step: number;
  reward?: number;
  kl?: number;
  flat?: number;
  lr?: number;
}

export class StallGuard extends StageWatch<Row> {
  /** `lrAuto`: the stage's lr is auto (the advice names its target then, not a fixed lr). */
  constructor(
    private readonly stage: string,
    history: Rec[] = [],
    private readonly lrAuto = false,
  ) {
    // A resumed stage: its earlier records count.
    super(stage, 'run_stalled', history);
  }

  protected row(r: Rec, step: number): Row {
    return {
      step,
      reward: num(r.batch_reward),
      kl: num(r.update_kl),
      flat: num(r.zero_variance_share),
      lr: num(r.lr),
    };
  }

  protected check(): RunWarning | undefined {
    const n = this.rows.length;
    if (n < STALL_STEPS) return undefined;
    const r0 = mean(this.rows.slice(0, STALL_WINDOW).map((x) => x.reward));
    const r1 = mean(this.rows.slice(-STALL_WINDOW).map((x) => x.reward));
    const recent = this.rows.slice(-STALL_STEPS);
    const kl = mean(recent.map((x) => x.kl));
    if (r0 === undefined || r1 === undefined || kl === undefined) return undefined;
    const flat = r1 <= r0 + FLAT_GAIN && r1 < SATURATED_REWARD;
    if (!flat || kl < MOVING_KL) return undefined;
    const share = mean(recent.map((x) => x.flat));
    const lr = mean(recent.map((x) => x.lr));
    const step = this.rows[n - 1]!.step;
    const groups =
      share !== undefined
        ? `; ${Math.round(share * 100)}% of the rollout groups had rewards all equal (they teach nothing under GRPO)`
        : '';
    const message =
      `run not learning in stage ${this.stage} at step ${step}: the reward of the trained rollouts is ${r1.toFixed(3)} ` +
      `over the last ${STALL_WINDOW} steps (start ${r0.toFixed(3)}) while the updates kept changing the policy ` +
      `(update KL ${kl.toExponential(1)} per token a step over the last ${STALL_STEPS})${groups}. ` +
      `Try: ${this.lrAuto ? 'a smaller trainer.lr_auto.target_kl (smaller steps)' : 'a smaller trainer.lr, or lr: auto'}; ` +
      'more samples per task (explorer.repeat_times) so a group has right and wrong answers to compare; ' +
      'a reward with more spread (partial credit) or easier tasks.';
    const values: Record<string, number> = { batch_reward: r1, start_batch_reward: r0, update_kl: kl };
    if (share !== undefined) values.zero_variance_share = share;
    if (lr !== undefined) values.lr = lr;
    return { code: 'run_stalled', step, stage: this.stage, message, values };
  }
}
