// `trainer.lr: auto`: the learning rate set by the policy change it causes. After each optimiser step
// the trainer measures the update KL (per token, between the policy before and after the step, on a
// probe of the step's own batch) and this controller moves the lr multiplicatively to keep that KL in
// a band around a target, as RSL-RL's and rl_games' adaptive schedules keep PPO at a desired KL.
// For small steps the KL grows as the square of the step (Adam's step is about lr per coordinate), so
// a factor f on the lr moves the KL by about f^2. While ramping from the start (until the KL first
// reaches the band) the lr goes straight to where the KL would meet the target, sqrt(target / KL), at
// most x10 a step (from 1e-6 the band is reached in 3-4 steps). After that one step's KL is noisy (a
// batch whose groups all agree barely moves the policy): 1.5 up or down near the band (KL 2x off moves
// back into it), /3 when the KL is 8x or more above it (a step far too large is cut at once).
import { logger } from '../core/log.js';

const log = logger('trainer');

export interface AdaptiveLrOptions {
  /** Update KL per token the controller aims at; the band is [target/2, 2*target]. */
  targetKl: number;
  /** The lr of the first step. */
  start: number;
  min: number;
  max: number;
}

/** KL this far (x or /) from the target moves the lr by FAR_FACTOR instead of NEAR_FACTOR. */
export const FAR = 8;
export const NEAR_FACTOR = 1.5;
export const FAR_FACTOR = 3;
/** The most one ramping step raises the lr (its KL then grows up to RAMP_MAX^2). */
export const RAMP_MAX = 10;

export class AdaptiveLr {
  private current: number;
  /** Still rising from the start: the KL has not reached the band yet. */
  private ramping = true;

  constructor(readonly o: AdaptiveLrOptions) {
    if (!(o.min > 0 && o.max >= o.min && o.targetKl > 0))
      throw new Error(`adaptive lr: bounds [${o.min}, ${o.max}] and target ${o.targetKl} must be positive`);
    this.current = clamp(o.start, o.min, o.max);
  }

  /** The lr of the next step. */
  get lr(): number {
    return this.current;
  }

  /** The band the update KL is kept in. */
  band(target = this.o.targetKl): { low: number; high: number } {
    return { low: target / 2, high: 2 * target };
  }

  /**
   * The update KL measured after a step taken with `this.lr` (`target`: this step's target, e.g.
   * shaped by a warm-up); returns the lr of the next step. A KL that is not a finite number (nothing
   * measured: no trained token in the probe) leaves the lr as it is.
   */
  observe(kl: number, target = this.o.targetKl): number {
    if (!Number.isFinite(kl) || kl < 0) return this.current;
    const { low, high } = this.band(target);
    let f = 1;
    if (kl > high) f = 1 / (kl > FAR * target ? FAR_FACTOR : NEAR_FACTOR);
    else if (kl < low)
      // Ramping: straight to where the KL would reach the target (KL ~ lr^2), at most RAMP_MAX a step.
      f = this.ramping
        ? Math.min(RAMP_MAX, Math.max(NEAR_FACTOR, Math.sqrt(target / Math.max(kl, 1e-30))))
        : NEAR_FACTOR;
    if (kl >= low) this.ramping = false;
    const next = clamp(this.current * f, this.o.min, this.o.max);
    if (next === this.o.max && this.current < this.o.max)
      log.info(`lr auto: reached its upper bound ${this.o.max} (update KL ${kl.toExponential(2)}, target ${target})`);
    this.current = next;
    return next;
  }

  /** State kept in a checkpoint: a resumed stage continues at the lr it had reached. */
  state(): { lr: number; ramping: boolean } {
    return { lr: this.current, ramping: this.ramping };
  }

  restore(s: { lr: number; ramping?: boolean }): void {
    if (Number.isFinite(s.lr) && s.lr > 0) this.current = clamp(s.lr, this.o.min, this.o.max);
    if (typeof s.ramping === 'boolean') this.ramping = s.ramping;
  }
}

function clamp(x: number, lo: number, hi: number): number {
  return Math.min(hi, Math.max(lo, x));
}

/**
 * The k3 estimate of KL(before || after) per token, exp(r) - 1 - r with r = after - before, over the
 * trained tokens (mask 1) of rows sampled near the policy before: never negative, low variance.
 * Returns the mean and the number of tokens.
 */
export function updateKl(before: number[][], after: number[][], masks: number[][]): { kl: number; tokens: number } {
  let sum = 0;
  let n = 0;
  before.forEach((b, i) => {
    const a = after[i]!;
    const m = masks[i]!;
    b.forEach((x, j) => {
      const y = a[j];
      if (!m[j] || y === undefined || !Number.isFinite(x) || !Number.isFinite(y)) return;
      const r = y - x;
      sum += Math.exp(r) - 1 - r;
      n++;
    });
  });
  return { kl: n ? sum / n : Number.NaN, tokens: n };
}

/**
 * Whether a batch can teach anything, so its update KL says something about the lr: a batch of
 * rollouts whose advantages are all zero (every group's rewards equal) moves the policy only by the
 * KL and weight-decay terms, and a ramp that trusted its tiny KL would jump x10 a step for nothing.
 * Expert rows, pairs and rows whose advantages the trainer computes (a critic) always count.
 */
export function batchTeaches(exps: { source?: string; advantages?: number[] }[]): boolean {
  return exps.some((e) => e.source !== 'usual' || !e.advantages || e.advantages.some((a) => a !== 0));
}
