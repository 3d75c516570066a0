// Partial rollouts in a distributed run (explorer.partial_rollout). A job is one group (a task x
// repeat_times samples); each job gives every trajectory of its group at most max_tokens_per_step new
// tokens. A group with an unfinished trajectory is acked as `partial` rows (never trainable) together
// with ONE continuation job `ID~cN` naming them (job-queue.ts ack): whoever leases that job continues
// the group with the weights it has loaded (a segment of that version per trajectory), and its ack
// replaces the rows, so a trajectory is continued by exactly one explorer at a time; a crashed
// explorer's continuation comes back when its lease runs out, as any lost job does. The continuation
// keeps its parent's step (target): it is a further round of the same step (as the local placements
// re-explore a step until it is full). It requires the version its parent job used (published, so
// loadable by every explorer; segment versions never decrease along a trajectory), never one the
// trainer waiting for that step has not made yet. Only a whole group
// goes on to the experience pipeline (group advantages over finished trajectories).
import type { Experience } from '../../core/types.js';
import type { LeasedJob, NewJob } from '../../buffer/queue/job-queue.js';
import { experienceId } from '../../buffer/queue/job-queue.js';
import { continuePartials, isUnfinished, settleGroups } from '../../explorer/partial.js';
import type { RewardFn, RolloutModel, Workflow, WorkflowSampling } from '../../explorer/workflow.js';

export interface PartialJobContext {
  runId: string;
  workflow: Workflow;
  model: RolloutModel;
  reward: RewardFn;
  sampling: WorkflowSampling;
  repeatTimes: number;
  /** explorer.partial_rollout.max_tokens_per_step */
  budget: number;
  seed: number;
  /** Provenance on each new row (job, worker, attempt, weights sha256), as every acked experience has. */
  metadata: Record<string, unknown>;
  /** Raw -> verified (the run's experience pipeline), applied to whole groups only. */
  process: (exps: Experience[]) => Experience[];
}

export interface PartialJobResult {
  /** What the ack writes: the verified experiences of a finished group, or the group's partial rows. */
  experiences: Experience[];
  /** The stored partial rows this ack replaces (deleted in its transaction). */
  replacing: string[];
  /** The group's continuation, when a trajectory is still unfinished. */
  next: NewJob | null;
  /** Trajectories continued by this job, and of them finished; most new tokens of one trajectory. */
  continued: number;
  finished: number;
  maxTrajectoryTokens: number;
}

/** `ID~cN` -> `ID~c(N+1)`; a fresh job's first continuation is `ID~c1`. */
export function continuationId(jobId: string): string {
  const m = /^(.*)~c(\d+)$/.exec(jobId);
  return m ? `${m[1]}~c${Number(m[2]) + 1}` : `${jobId}~c1`;
}

/**
 * Why a continuation cannot run: the partial rows it continues are gone or no longer partial (rows
 * cleared, a hand edit of the buffer); null when they are all there. The explorer acks such a job with
 * nothing (counted as dropped.broken_chain) instead of failing on it, so the run goes on.
 */
export function brokenChain(job: LeasedJob, stored: Experience[]): string | null {
  if (!job.continues || stored.length === job.continues.length) return null;
  return `job ${job.id}: continues ${job.continues.length} partial row(s), ${stored.length} found as partial in the buffer`;
}

/**
 * Runs one job with partial rollouts. `stored`: the group's partial rows the job continues (read by
 * its lease holder; empty for a fresh job).
 */
export async function runPartialJob(
  job: LeasedJob,
  stored: Experience[],
  ctx: PartialJobContext,
): Promise<PartialJobResult> {
  const broken = brokenChain(job, stored);
  if (broken) throw new Error(broken);
  let fresh: Experience[] = [];
  let cont: { experiences: Experience[]; newTokens: number[] } = { experiences: [], newTokens: [] };
  if (!job.continues) {
    const raw = await ctx.workflow.run([job.task], {
      model: ctx.model,
      reward: ctx.reward,
      runId: ctx.runId,
      repeatTimes: ctx.repeatTimes,
      split: 'train',
      step: job.target,
      seed: ctx.seed,
      sampling: ctx.sampling,
      partialBudget: ctx.budget,
    });
    // Ids by sample before settling: a partial row keeps its id until its trajectory is trained.
    fresh = raw.map((e, i) => ({
      ...e,
      id: experienceId(ctx.runId, job.id, i),
      groupId: `${ctx.runId}:job:${job.id}`,
      metadata: { ...(e.metadata ?? {}), ...ctx.metadata },
    }));
  } else {
    const unfinished = stored.filter(isUnfinished);
    if (unfinished.length)
      cont = await continuePartials(unfinished, {
        model: ctx.model,
        reward: ctx.reward,
        sampling: ctx.sampling,
        budget: ctx.budget,
        step: job.target,
        seed: ctx.seed,
      });
    // Which lease added each later segment (one entry per segment after the first): provenance, and what
    // shows that no trajectory is continued twice.
    const by = { job: job.id, attempt: job.attempt, worker: ctx.metadata.worker };
    const grown = cont.newTokens;
    cont.experiences = cont.experiences.map((e, i) =>
      grown[i]! > 0
        ? {
            ...e,
            metadata: {
              ...(e.metadata ?? {}),
              continued_by: [...((e.metadata?.continued_by as unknown[] | undefined) ?? []), by],
            },
          }
        : e,
    );
  }
  const settled = settleGroups([...stored.filter((e) => !isUnfinished(e)), ...cont.experiences, ...fresh]);
  const verified = settled.complete.length ? ctx.process(settled.complete) : [];
  const next: NewJob | null = settled.waiting.length
    ? // At least the version this job used: a trajectory's segments never go back to older weights.
      {
        id: continuationId(job.id),
        target: job.target,
        requiredVersion: Math.max(job.requiredVersion, ctx.model.version),
        task: job.task,
        continues: settled.waiting.map((e) => e.id),
      }
    : null;
  return {
    experiences: [...verified, ...settled.waiting],
    replacing: stored.map((e) => e.id),
    next,
    continued: cont.experiences.length,
    finished: cont.experiences.filter((e) => !isUnfinished(e)).length,
    maxTrajectoryTokens: Math.max(0, ...fresh.map((e) => e.responseTokens.length), ...cont.newTokens),
  };
}
