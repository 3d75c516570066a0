// The distributed explorer's gate for the one explorer driver (explorer/explorer-loop.ts driveExplorer):
// its work is jobs leased from the run's queue. A version takes only jobs it may run (the queue gates
// them by sync_offset, or in async by max_staleness), never with weights more than max_staleness
// versions behind the newest; each job's lease is checked again before its rollout (a paused or cut-off
// worker's leases may have gone to someone else), and its experiences and completion are acked in one
// transaction, retried until the database answers. With explorer.partial_rollout a job may continue a
// group's stored trajectories (partial-jobs.ts).
import { logger } from '../../core/log.js';
import type { Experience } from '../../core/types.js';
import { ConflictError } from '../../core/errors.js';
import type { RunConfig } from '../../core/config.js';
import type { JobQueue, AckExtra, AckResult, LeasedJob } from '../../buffer/queue/job-queue.js';
import { withRetry } from '../../buffer/queue/retry.js';
import type { ExplorerGate, PublishedWeights, Wait } from '../../explorer/explorer-loop.js';
import type { Explorer } from '../../explorer/explorer.js';
import {
  workflowSampling,
  type RewardFn,
  type RolloutModel,
  type SamplingConfig,
  type Workflow,
} from '../../explorer/workflow.js';
import { brokenChain, runPartialJob } from './partial-jobs.js';
import type { TrainerWatch } from './trainer-lost.js';

const log = logger('dist-explorer');

/** What a distributed explorer did, for its result and its heartbeat row. */
export interface LeaseCounts {
  jobs: number;
  experiences: number;
  refused: { lease_lost: number; stale: number };
  dropped: { lease_lost: number; stale: number; broken_chain: number };
  busyS: number;
  partial: { continued: number; finished: number; queued: number; maxTrajectoryTokens: number };
}

export interface LeaseGateOptions {
  q: JobQueue;
  runId: string;
  worker: string;
  cfg: RunConfig;
  /** Jobs leased at once. */
  batch: number;
  leaseMs: number;
  /** The run's explorer (without partial rollouts): one job = one explore step, its rows kept for the ack. */
  explorer?: Explorer;
  /** The rows the explorer's last step made (its sink), taken by the ack. */
  takeMade(): Experience[];
  /** The job the explorer's step is running (its task, ids and provenance come from it). */
  setCurrent(job: LeasedJob, provenance: Record<string, unknown>): void;
  workflow: Workflow;
  reward: RewardFn;
  sampling: SamplingConfig;
  process(raw: Experience[]): Experience[];
  /** The weights' checksum (provenance of every row). */
  checksum(): string;
  /** Resolves when the trainer announces new weights (cuts a wait for them short). */
  notified(): Promise<void>;
  /** The run's trainer: a wait names it when it is lost, and ends in TrainerLostError after the explorer's wait. */
  trainer?: TrainerWatch;
  signal?: AbortSignal;
}

export class LeaseGate implements ExplorerGate<LeasedJob> {
  readonly counts: LeaseCounts = {
    jobs: 0,
    experiences: 0,
    refused: { lease_lost: 0, stale: 0 },
    dropped: { lease_lost: 0, stale: 0, broken_chain: 0 },
    busyS: 0,
    partial: { continued: 0, finished: 0, queued: 0, maxTrajectoryTokens: 0 },
  };
  /** Leases held now (renewed by the heartbeat, given back at the end). */
  readonly held = new Set<LeasedJob>();
  /** When each completed experience was acked (the heartbeat's throughput). */
  readonly acks: number[] = [];
  private leasedAt = 0;
  private readonly S: number;

  constructor(private readonly o: LeaseGateOptions) {
    this.S = o.cfg.buffer.max_staleness;
  }

  async done(): Promise<boolean> {
    if (await this.o.q.getState(this.o.runId, 'dist:done')) return true;
    // Also where a wait never reaches take() (weights that only the lost trainer served): give up in time.
    await this.o.trainer?.check();
    return false;
  }

  async take(model: RolloutModel | null, latest: PublishedWeights | null): Promise<LeasedJob[] | Wait> {
    const { q, runId } = this.o;
    if (!model || !latest) return { wait: 'weights', detail: 'no weights loaded yet', ms: 300 };
    if (model.version < latest.version - this.S)
      return {
        wait: 'weights',
        detail: `weights v${model.version} are stale (newest v${latest.version}, bound ${this.S})`,
        ms: 500,
      };
    const jobs = await q.lease(runId, this.o.worker, model.version, this.o.batch, this.o.leaseMs);
    if (!jobs.length) {
      const forWeights = (await q.versionGated(runId, model.version)) > 0;
      const lost = await this.o.trainer?.check();
      return {
        wait: forWeights ? 'weights' : 'jobs',
        detail: lost ?? (forWeights ? `no job for v${model.version}` : 'no job planned yet'),
        ms: 300,
        wake: this.o.notified(),
      };
    }
    for (const j of jobs) this.held.add(j);
    this.leasedAt = Date.now();
    return jobs;
  }

  describe(job: LeasedJob, model: RolloutModel): string {
    return `job ${job.id} with v${model.version}`;
  }

  async admit(job: LeasedJob, model: RolloutModel): Promise<'run' | 'dropped' | 'abandon'> {
    const { q, runId, worker: id } = this.o;
    // A worker that was paused or cut off may hold leases that expired and went to someone else,
    // and weights that went stale meanwhile: checked before each rollout, not only at the ack.
    if (Date.now() - this.leasedAt <= 1000) return 'run';
    const chk = await q.leaseCheck(runId, job, id);
    if (!chk.live) {
      this.held.delete(job);
      this.counts.dropped.lease_lost++;
      log.warn(`job ${job.id} (attempt ${job.attempt}): lease lost before its rollout; dropped`);
      return 'dropped';
    }
    if (model.version < chk.latest - this.S) {
      for (const j of this.held) await q.release(runId, j, id);
      this.counts.dropped.stale += this.held.size;
      log.warn(
        `weights v${model.version} went stale (newest v${chk.latest}, bound ${this.S}): ${this.held.size} job(s) given back`,
      );
      this.held.clear();
      return 'abandon';
    }
    return 'run';
  }

  async run(job: LeasedJob, model: RolloutModel): Promise<void> {
    const { q, runId, worker: id, cfg } = this.o;
    const jobStart = performance.now();
    const seed = (cfg.seed * 1_000_003 + hashString(job.id) * 31 + job.attempt) >>> 0;
    const provenance = { job: job.id, worker: id, attempt: job.attempt, weights: this.o.checksum() };
    const partial = cfg.explorer.partial_rollout;
    let exps: Experience[] = [];
    let extra: AckExtra = {};
    // Partial rollouts (partial-jobs.ts): the group's stored rows are read by this lease's holder only.
    const stored = partial && job.continues ? await q.partialRows(runId, job.continues) : [];
    // A continuation whose rows are gone is acked with nothing (done, no continuation), never
    // thrown: every explorer leasing it would fail the same way. Its step is topped up by the
    // trainer (feeding-sampler.ts) as for any group that produced nothing; leftover rows stay partial.
    let broken = partial ? brokenChain(job, stored) : null;
    if (partial && !broken) {
      const pr = await runPartialJob(job, stored, {
        runId,
        workflow: this.o.workflow,
        model,
        reward: this.o.reward,
        sampling: workflowSampling(this.o.sampling, model.tokenizer),
        repeatTimes: cfg.explorer.repeat_times,
        budget: partial.max_tokens_per_step,
        seed,
        metadata: provenance,
        process: this.o.process,
      });
      exps = pr.experiences;
      extra = { replacing: pr.replacing, ...(pr.next ? { next: pr.next } : {}) };
      const p = this.counts.partial;
      p.continued += pr.continued;
      p.finished += pr.finished;
      p.maxTrajectoryTokens = Math.max(p.maxTrajectoryTokens, pr.maxTrajectoryTokens);
      if (pr.next) p.queued++;
    } else if (this.o.explorer) {
      this.o.setCurrent(job, provenance);
      this.o.explorer.step = job.target;
      await this.o.explorer.exploreStep(model, { seed });
      exps = this.o.takeMade();
    }
    // Retried until the database answers, however long the cut: the answer is then definite (landed,
    // or refused as lost / stale and counted), never a rollout silently given up.
    const ack = () =>
      withRetry(() => q.ack(runId, job, id, model.version, this.S, exps, extra), { signal: this.o.signal });
    let r: AckResult;
    try {
      r = await ack();
    } catch (e) {
      // The rows changed while this job continued them (the ack's transaction was rolled back whole).
      if (!(e instanceof ConflictError) || !extra.replacing?.length) throw e;
      broken = e.message;
      exps = [];
      extra = {};
      r = await ack();
    }
    this.held.delete(job);
    this.counts.busyS += (performance.now() - jobStart) / 1000;
    if (r.ok && broken) {
      this.counts.dropped.broken_chain++;
      log.warn(
        `${broken}: the group's chain is broken (rows cleared or edited); job acked with no experiences, its step is topped up`,
      );
    } else if (r.ok) {
      this.counts.jobs++;
      // Partial rows are not experiences yet (their group is still being rolled out).
      const done = exps.filter((e) => e.status !== 'partial').length;
      this.counts.experiences += done;
      for (let i = 0; i < done; i++) this.acks.push(Date.now());
    } else {
      this.counts.refused[r.reason]++;
      log.warn(`job ${job.id} (attempt ${job.attempt}) refused: ${r.reason}; its experiences are dropped`);
    }
  }
}

function hashString(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
