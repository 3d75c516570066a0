// Watches a stage's train records for a policy that collapses: a learning rate too high for a
// pretrained model drives it far from its reference within a few steps (KL tens of nats per token),
// its rollout reward falls far below where it started and its entropy moves far (answers turn to
// fragments). The guard compares each step's KL to the reference (`ref_kl`), rollout reward
// (`batch_reward`) and sampled entropy (`sampled_entropy`) over the last few steps with their values
// over the stage's first steps, and says once per stage, with the numbers, what is wrong and the
// likely cause: a fixed lr too high, or (lr auto) steps too large even at the lr the update KL allowed.
// It warns and records; it never stops a run (the user decides).
import type { RunWarning } from '../core/protocol.js';
import { StageWatch, mean, num, type Rec } from './stage-watch.js';

/** Steps averaged for the start values and for the recent ones. */
export const GUARD_WINDOW = 3;
/** KL per token to the reference above which a falling reward is a collapse. */
export const KL_WITH_DROP = 1;
/** KL per token to the reference that is a collapse by itself (healthy RL stays far below 1). */
export const KL_ALONE = 10;
/** Entropy off by this factor (either way) from its start, with a falling reward or a large KL and no better reward, is a collapse. */
export const ENTROPY_FACTOR = 3;

export interface GuardOptions {
  stage: string;
  /**
   * The stage's fixed lr, or `auto` (the lr each step took is in its record), and where it came from
   * (core/trainer-defaults.ts line), named in the warning.
   */
  lr: number | 'auto';
  lrSource: string;
  /** What the user can set instead, for the message. */
  advice: string;
}

type Row = { step: number; kl?: number; reward?: number; entropy?: number; lr?: number; ukl?: number };

export class CollapseGuard extends StageWatch<Row> {
  constructor(
    private readonly o: GuardOptions,
    history: Rec[] = [],
  ) {
    // A resumed stage: its earlier train records give the start values.
    super(o.stage, 'policy_collapse', history);
  }

  protected row(r: Rec, step: number): Row {
    return {
      step,
      kl: num(r.ref_kl),
      reward: num(r.batch_reward),
      entropy: num(r.sampled_entropy),
      lr: num(r.lr),
      ukl: num(r.update_kl),
    };
  }

  protected check(): RunWarning | undefined {
    const n = this.rows.length;
    if (n < 2 * GUARD_WINDOW) return undefined;
    const avg = (rows: Row[], k: 'kl' | 'reward' | 'entropy' | 'lr' | 'ukl') => mean(rows.map((x) => x[k]));
    const first = this.rows.slice(0, GUARD_WINDOW);
    const last = this.rows.slice(-GUARD_WINDOW);
    const kl = avg(last, 'kl');
    const [r0, r1] = [avg(first, 'reward'), avg(last, 'reward')];
    const [h0, h1] = [avg(first, 'entropy'), avg(last, 'entropy')];
    const k0 = avg(first, 'kl');
    // "Far below": lost half of what it started with (and at least 0.1 of reward).
    const dropped = r0 !== undefined && r1 !== undefined && r0 > 0 && r1 <= r0 - Math.max(0.5 * r0, 0.1);
    const klHigh = kl !== undefined && kl > KL_WITH_DROP;
    const entropyMoved =
      h0 !== undefined && h1 !== undefined && h0 > 0 && (h1 > ENTROPY_FACTOR * h0 || h1 < h0 / ENTROPY_FACTOR);
    const severe = kl !== undefined && kl > KL_ALONE;
    // A policy that only got sure of right answers (entropy down, reward up) is learning, not collapsing.
    // The reward is the trained rows' (groups whose rewards all agree are dropped before training), so it
    // reads high after a collapse: the entropy with a large KL tells it then.
    const improved = r0 !== undefined && r1 !== undefined && r1 > r0 + 0.1;
    if (!severe && !(klHigh && (dropped || (entropyMoved && !improved))) && !(dropped && entropyMoved))
      return undefined;
    const step = this.rows[n - 1]!.step;
    const parts = [
      ...(kl !== undefined ? [`KL to the reference ${kl.toFixed(2)} nats/token (start ${k0?.toFixed(3) ?? '?'})`] : []),
      ...(r1 !== undefined ? [`reward of the trained rollouts ${r1.toFixed(3)} (start ${r0?.toFixed(3) ?? '?'})`] : []),
      ...(h1 !== undefined ? [`sampled entropy ${h1.toFixed(2)} nats/token (start ${h0?.toFixed(2) ?? '?'})`] : []),
    ];
    const lastLr = this.o.lr === 'auto' ? avg(last, 'lr') : this.o.lr;
    const ukl = avg(last, 'ukl');
    const cause =
      this.o.lr === 'auto'
        ? `the steps are too large for this model even at the lr auto set (${lastLr !== undefined ? fmt(lastLr) : '?'}, update KL ${ukl?.toExponential(1) ?? '?'} per token, ${this.o.lrSource})`
        : `the learning rate ${fmt(this.o.lr)} (${this.o.lrSource}) is too high for this model`;
    const message = `policy collapse in stage ${this.o.stage} at step ${step}: ${parts.join(', ')}, over the last ${GUARD_WINDOW} steps against the stage's first ${GUARD_WINDOW}. Likely cause: ${cause}; ${this.o.advice}`;
    const values: Record<string, number> = {};
    put0(values, 'lr', lastLr);
    put0(values, 'update_kl', ukl);
    const put = (k: string, v: number | undefined) => v !== undefined && (values[k] = v);
    put('ref_kl', kl);
    put('start_ref_kl', k0);
    put('batch_reward', r1);
    put('start_batch_reward', r0);
    put('sampled_entropy', h1);
    put('start_sampled_entropy', h0);
    return { code: 'policy_collapse', step, stage: this.o.stage, message, values };
  }
}

function put0(o: Record<string, number>, k: string, v: number | undefined): void {
  if (v !== undefined) o[k] = v;
}

function fmt(x: number): string {
  return x >= 0.01 ? String(x) : x.toExponential().replace(/\.?0+e/, 'e');
}
