// Live updates of the server's runs: one timer reads the run registry and the metrics.jsonl of the
// runs that are running, and sends each subscriber complete metric points and status changes.
import { isDawnLine } from '../core/dawn-lines.js';
import { join } from 'node:path';
import type { MetricsPoint, RunInfo } from '../core/protocol.js';
import type { RunRegistry } from '../buffer/runs.js';
import { MetricsLog, runWarnings } from '../coordinator/monitor.js';
import type { Disposable } from './ports.js';
import { runInfo } from './adapters/run-registry.js';

type Subscriber = { metrics?: (m: MetricsPoint) => void; status?: (r: RunInfo) => void };

/**
 * One timer for all live updates: reads the registry, and the metrics of the runs that are running
 * (plus one last read after a run leaves 'running', so its final points are not lost).
 * The newest step of a running run is held back until the next one starts: the explore, train and
 * state records of a step are written one after another, and a point is sent once, complete.
 */
export class RunPoller {
  private readonly subs = new Set<Subscriber>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly sent = new Map<string, number>();
  private readonly last = new Map<string, { key: string; running: boolean }>();
  /** Step / reward read from the metrics while the run ran (kept after it stops). */
  private readonly live = new Map<string, { step: number; reward?: number }>();
  private busy = false;

  constructor(
    private readonly registry: () => Promise<RunRegistry>,
    private readonly ms: number,
  ) {}

  subscribe(s: Subscriber): Disposable {
    this.subs.add(s);
    this.timer ??= setInterval(() => void this.tick(), this.ms);
    return {
      dispose: () => {
        this.subs.delete(s);
        if (this.subs.size === 0 && this.timer) {
          clearInterval(this.timer);
          this.timer = undefined;
        }
      },
    };
  }

  async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      for (const rec of await (await this.registry()).list()) {
        const running = rec.status === 'running';
        const prev = this.last.get(rec.id);
        let info: RunInfo = runInfo(rec);
        if (running || prev?.running) {
          const pts = toPoints(rec.id, new MetricsLog(join(rec.dir, 'metrics.jsonl')).read());
          const newest = pts[pts.length - 1];
          // Live step / reward for the Runs view and status bar (the registry has them per checkpoint):
          // the trainer steps done (not the newest point's step: an explore step ahead or the final
          // eval at step 50 made it one too many).
          const trained = pts.reduce((m, p) => Math.max(m, p.trained ?? 0), 0);
          if (newest) {
            const reward = [...pts].reverse().find((p) => p.values.reward !== undefined)?.values.reward;
            this.live.set(rec.id, { step: trained, reward });
          }
          const from = this.sent.get(rec.id) ?? -1;
          const upTo = running ? (newest?.step ?? 0) - 1 : Infinity;
          const fresh = pts.filter((p) => p.step > from && p.step <= upTo);
          for (const p of fresh) for (const s of this.subs) s.metrics?.(p);
          if (fresh.length) this.sent.set(rec.id, fresh[fresh.length - 1]!.step);
        }
        const live = this.live.get(rec.id);
        if (live)
          info = {
            ...info,
            step: Math.max(info.step ?? 0, live.step),
            ...(live.reward !== undefined ? { reward: live.reward } : {}),
          };
        // The checkpoints by version: a new one that replaces a pruned one keeps the count, and is news.
        const key = JSON.stringify([info.status, info.step, info.reward, info.checkpoints?.map((c) => c.version)]);
        // A finished run seen for the first time is no news; every change after that is.
        if (key !== prev?.key && (prev || running)) for (const s of this.subs) s.status?.(info);
        this.last.set(rec.id, { key, running });
      }
    } catch {
      // the registry may be mid-write; try again next tick
    } finally {
      this.busy = false;
    }
  }
}

/** The last `n` non-empty lines of a log, without Dawn's probe warnings. */
export function tail(text: string, n: number): string[] {
  // Dawn's GPU-probe warnings are no part of a run's failure (a CPU-only run prints them too).
  return text
    .split('\n')
    .filter((l) => l.trim() !== '' && !isDawnLine(l))
    .slice(-n);
}

/** Metrics records -> one point per trainer step, with explore / eval / state values merged in. */
export function toPoints(runId: string, recs: ReturnType<MetricsLog['read']>): MetricsPoint[] {
  const byStep = new Map<number, MetricsPoint>();
  // Stage records carry no step: the stage they open is attached to the points that follow.
  let stage: string | undefined;
  for (const r of recs) {
    if (r.kind === 'stage' && typeof r.stage === 'string') stage = r.stage;
    if (typeof r.step !== 'number') continue;
    const p = byStep.get(r.step) ?? { runId, step: r.step, at: r.t, values: {}, ...(stage ? { stage } : {}) };
    const put = (k: string, v: unknown) => {
      if (typeof v === 'number' && Number.isFinite(v)) p.values[k] = v;
    };
    if (r.kind === 'train') {
      const v = typeof r.model_version === 'number' ? r.model_version : r.step + 1;
      p.trained = Math.max(p.trained ?? 0, v);
      for (const k of [
        'loss',
        'pg_loss',
        'sft_loss',
        'grpo_loss',
        'kl_loss',
        'entropy_loss',
        'grad_norm',
        'lr',
        'tokens_per_s',
        'staleness',
      ])
        put(k.includes('loss') && k !== 'loss' ? `loss/${k}` : k, r[k]);
      // The dashboard's chart keys (webview/dashboard/protocol.ts CHARTS).
      put('loss/total', r.loss);
      put('loss/policy', r.policy_loss ?? r.pg_loss ?? r.grpo_loss);
      put('loss/sft', r.sft_loss);
      put('loss/critic', r.critic_loss); // PPO's value loss (trainer.ts criticStep)
      // KL to the reference: the algorithm's KL loss term, else the trainer's k1 estimate (ref_kl, any algorithm with a reference).
      put('kl', r.kl ?? r.kl_loss ?? r.ref_kl ?? r['usual/ppo_kl']);
      put('ref_kl', r.ref_kl);
      // The entropy term where the algorithm has one, else the sampled tokens' mean -log-prob (an estimate of it).
      put('entropy', r.entropy ?? r['usual/entropy'] ?? r.sampled_entropy);
      put('batch_reward', r.batch_reward);
      // The step size: the update KL (policy before vs after the step), lr auto's target, the groups without signal.
      put('update_kl', r.update_kl);
      put('update_kl_target', r.update_kl_target);
      put('zero_variance_share', r.zero_variance_share);
      put('skipped_experiences', r.skipped_experiences);
    } else if (r.kind === 'explore') put('reward', r.reward_mean);
    else if (r.kind === 'eval') put('eval_accuracy', r.accuracy);
    else if (r.kind === 'warning') {
      const w = runWarnings([r])[0];
      if (w) p.warnings = [...(p.warnings ?? []), w];
    } else if (r.kind === 'state') {
      put('idle/trainer', r.trainer_idle);
      put('idle/explorer', r.explorer_idle);
    }
    byStep.set(r.step, p);
  }
  return [...byStep.values()].sort((a, b) => a.step - b.step);
}
