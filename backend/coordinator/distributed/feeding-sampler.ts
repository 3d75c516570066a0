// The trainer's sampler in a distributed run: before each read it makes sure the jobs that feed
// the coming steps are queued (targets up to step + the plan's lead: sync_offset, or max_staleness in async), and when a read would wait while
// no job that could still fill the batch is open (groups that produced nothing trainable, or went
// stale), it queues top-up jobs for the missing groups instead of waiting forever.
import {
  SampleTimeoutError,
  type SampleBatch,
  type SampleRequest,
  type Sampler,
  type WaitStatus,
} from '../../buffer/sampler/index.js';
import type { JobQueue, NewJob } from '../../buffer/queue/job-queue.js';
import { withRetry, type RetryOptions } from '../../buffer/queue/retry.js';
import type { LinkWatch } from './link-watch.js';
import { waitReason } from './wait-reason.js';
import type { Experience } from '../../core/types.js';
import { logger } from '../../core/log.js';

const log = logger('dist-trainer');
import { stepJobs, stepJobsOf, topUpJob, type JobPlan } from './jobs-plan.js';
import type { PlannedSelector } from './selector-plan.js';

export class FeedingSampler implements Sampler {
  readonly name: string;
  /** Top-up jobs queued (a figure for the report). */
  topUps = 0;

  constructor(
    private readonly inner: Sampler,
    private readonly q: JobQueue,
    private readonly runId: string,
    private readonly plan: JobPlan,
    private readonly groupSize: number,
    /** A selector that learns from outcomes picks each step's tasks (else the plan's pure pick). */
    private readonly planner?: PlannedSelector,
    /** The trainer's own database link: its outages are the reason for a wait, not the explorers. */
    private readonly link?: LinkWatch,
  ) {
    this.name = inner.name;
    this.retry = link?.retry() ?? {};
  }

  private readonly retry: RetryOptions;

  async feed(step: number): Promise<void> {
    const jobs: NewJob[] = [];
    for (let t = step; t <= step + this.lead; t++) {
      if (this.plan.end !== undefined && t >= this.plan.end) break;
      jobs.push(...(this.planner ? stepJobsOf(this.plan, t, await this.planner.tasksFor(t)) : stepJobs(this.plan, t)));
    }
    await withRetry(() => this.q.addJobs(this.runId, jobs), this.retry);
  }

  private async topUp(step: number, st: WaitStatus): Promise<void> {
    if ((await withRetry(() => this.q.openJobs(this.runId, step + this.lead), this.retry)) > 0) return;
    const groups = Math.ceil((st.needed - st.ready) / this.groupSize);
    const have = await withRetry(() => this.q.jobCount(this.runId, `${step}:x`), this.retry);
    const jobs = Array.from({ length: groups }, (_, i) => topUpJob(this.plan, step, have + i));
    this.topUps += await withRetry(() => this.q.addJobs(this.runId, jobs), this.retry);
  }

  private get lead(): number {
    return this.plan.lead ?? this.plan.sync.offset;
  }

  /** The experiences of the newest batch (the trainer's per-step reward metrics). */
  last: Experience[] = [];
  /** After each batch is taken (task synthesis from its tasks: coordinator/task-synthesis.ts). */
  afterBatch?: (step: number, exps: Experience[]) => Promise<void>;

  async sample(req: SampleRequest): Promise<SampleBatch> {
    const start = performance.now();
    const startWall = Date.now();
    const deadline = Date.now() + (req.timeoutMs ?? 600_000);
    if (req.step !== undefined) await this.feed(req.step);
    for (;;) {
      try {
        const b = await this.inner.sample({ ...req, timeoutMs: 1000 });
        this.last = b.experiences;
        if (this.planner && req.step !== undefined)
          await withRetry(() => this.planner!.trained(req.step!, b.experiences));
        if (this.afterBatch && req.step !== undefined) await this.afterBatch(req.step, b.experiences);
        return { ...b, waitedMs: performance.now() - start };
      } catch (e) {
        if (!(e instanceof SampleTimeoutError) || Date.now() > deadline || req.signal?.aborted) throw e;
        if (req.step !== undefined) await this.topUp(req.step, e.status);
        await this.sayWhy(start, startWall, e.status);
      }
    }
  }

  private said = 0;

  /**
   * A wait longer than 10 s gets a line in the trainer's log (again every 30 s) with what the
   * explorers report: a trainer that waits because no explorer can load the weights says so.
   */
  private async sayWhy(start: number, startWall: number, st: WaitStatus): Promise<void> {
    if (performance.now() - start < 10_000 || Date.now() - this.said < 30_000) return;
    this.said = Date.now();
    const why = waitReason(
      await withRetry(() => this.q.workers(this.runId), this.retry),
      this.link?.outageSince(startWall) ?? null,
    );
    log.warn(`waiting ${((performance.now() - start) / 1000).toFixed(0)} s for experiences (${st.message}): ${why}`);
  }

  waitStatus(n: number, currentVersion: number): Promise<WaitStatus | null> {
    return this.inner.waitStatus(n, currentVersion);
  }
}
