// Watches a stage's train records for a run that is not learning: the rollout reward (`batch_reward`)
// stays where it started while every update keeps changing the policy (`update_kl`, the KL between the
// policy before and after each step). The updates then go somewhere the reward does not reward, most
// often because the groups give no signal: a group whose rewards are all equal has zero advantage
// (`zero_variance_share`, trainer/group-spread.ts). Says it once per stage, with the numbers and what
// to try; never stops the run. A reward already near the top (nothing left to learn) is not a stall.
import type { RunWarning } from '../core/protocol.js';

/** Steps of the stage before a stall can be named, and the window the recent figures average over. */
export const STALL_STEPS = 40;
/** Steps averaged for the start and the recent reward. */
export const STALL_WINDOW = 10;
/** A recent reward no more than this above the start's is flat. */
export const FLAT_GAIN = 0.05;
/** Mean update KL per token a step above which the policy is moving (auto keeps it near 1e-3). */
export const MOVING_KL = 1e-5;
/** A reward at or above this is near the top: flat because learned. */
export const SATURATED_REWARD = 0.95;

type Rec = Record<string, unknown>;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const mean = (xs: (number | undefined)[]): number | undefined => {
  const ys = xs.filter((x): x is number => x !== undefined);
  return ys.length ? ys.reduce((a, b) => a + b, 0) / ys.length : undefined;
};

interface Row {
  step: number;
  reward?: number;
  kl?: number;
  flat?: number;
  lr?: number;
}

export class StallGuard {
  private readonly rows: Row[] = [];
  private warned = false;

  constructor(
    private readonly stage: string,
    history: Rec[] = [],
  ) {
    // A resumed stage: its earlier records count, and a warning said is not said again.
    for (const r of history) {
      if (r.stage !== stage) continue;
      if (r.kind === 'warning' && r.code === 'run_stalled') this.warned = true;
      if (r.kind === 'train') this.push(r);
    }
  }

  private push(r: Rec): void {
    const step = num(r.step);
    if (step === undefined) return;
    this.rows.push({
      step,
      reward: num(r.batch_reward),
      kl: num(r.update_kl),
      flat: num(r.zero_variance_share),
      lr: num(r.lr),
    });
  }

  /** One train record of the stage; a warning the first time the stage looks stalled. */
  observe(r: Rec): RunWarning | undefined {
    this.push(r);
    if (this.warned) return undefined;
    const w = this.check();
    if (w) this.warned = true;
    return w;
  }

  private check(): RunWarning | undefined {
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
      'Try: a smaller trainer.lr (or lr: auto); more samples per task (explorer.repeat_times) so a group ' +
      'has right and wrong answers to compare; a reward with more spread (partial credit) or easier tasks.';
    const values: Record<string, number> = { batch_reward: r1, start_batch_reward: r0, update_kl: kl };
    if (share !== undefined) values.zero_variance_share = share;
    if (lr !== undefined) values.lr = lr;
    return { code: 'run_stalled', step, stage: this.stage, message, values };
  }
}
