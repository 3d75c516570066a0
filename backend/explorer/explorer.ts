// The explorer: picks tasks, runs the workflow on the current rollout model, passes the raw
// experiences through the experience pipeline and appends them to the buffer. One `step` is one
// batch of tasks x repeat_times samples.
import type { Experience, Task } from '../core/types.js';
import { Rng } from '../core/rng.js';
import { logger } from '../core/log.js';
import { workflowSampling, type RewardFn, type RolloutModel, type SamplingConfig, type Workflow } from './workflow.js';
import { continuePartials, isUnfinished, settleGroups, type PartialRolloutOptions } from './partial.js';

const log = logger('explorer');

export interface TaskSource {
  next(n: number): Task[];
}

/** Where verified experiences go (the buffer), and the raw -> verified step before it. */
export interface ExperienceSink {
  /** `replacing`: partial rows this batch writes again (one transaction with the append). */
  append(exps: Experience[], opts?: { replacing?: string[] }): Promise<void>;
  /** Partial rollouts: this run's stored `partial` rows (unfinished trajectories and the samples waiting with them). */
  pending?(): Promise<Experience[]>;
}

export interface ExplorerOptions {
  runId: string;
  tasksPerStep: number;
  repeatTimes: number;
  sampling: SamplingConfig;
  seed: number;
  /** Raw -> verified (validity, filters, shaping, advantages). */
  process?: (exps: Experience[]) => Experience[] | Promise<Experience[]>;
  /** explorer.partial_rollout: a per-step token budget per trajectory (needs a sink with `pending`). */
  partial?: PartialRolloutOptions;
  /** After a step's experiences are stored: task synthesis from its tasks (coordinator/task-synthesis.ts). */
  afterStep?: (tasks: Task[], model: RolloutModel, step: number) => Promise<void>;
}

export interface ExploreMetrics {
  explore_step: number;
  model_version: number;
  experiences: number;
  reward_mean: number;
  ok: number;
  /** Verified experiences with status ok that reached the buffer (what a trainer may sample). */
  trainable: number;
  invalid: number;
  infra_failure: number;
  /** An infra failure's reason (status_reason) of this step, when there was one: what a stop for them names. */
  infra_reason?: string;
  rollout_s: number;
  /** Tokens generated in this step (continuations count only their new tokens). */
  tokens: number;
  /** Partial rollouts: trajectories continued this step, of them finished, left unfinished after it; most new tokens of one trajectory. */
  partial_continued?: number;
  partial_finished?: number;
  partial_pending?: number;
  max_trajectory_tokens?: number;
}

export class Explorer {
  step = 0;
  /**
   * The last step was stopped before it had its batch (a refill cut by the stop: FillingExplorer). It
   * is not a finished step: the loop does not move past it, so a resume explores it again instead of
   * leaving the trainer waiting for rows no explorer makes.
   */
  cutShort = false;
  private readonly rng: Rng;

  constructor(
    private readonly workflow: Workflow,
    private readonly reward: RewardFn,
    private readonly tasks: TaskSource,
    private readonly sink: ExperienceSink,
    private readonly opts: ExplorerOptions,
  ) {
    this.rng = new Rng(opts.seed);
    if (opts.partial && !sink.pending)
      throw new Error('partial rollouts need a buffer that keeps partial rows (sink.pending)');
  }

  /** `seed`: the step's sampling seed when the caller fixes it (a distributed job's, from its id and attempt). */
  async exploreStep(model: RolloutModel, o: { seed?: number } = {}): Promise<ExploreMetrics> {
    const t0 = performance.now();
    const partial = this.opts.partial;
    // Stored partial rows first: continued before new tasks are drawn (a killed explorer's prefixes are picked up here).
    const pending = partial ? await this.sink.pending!() : [];
    const tasks = this.tasks.next(this.opts.tasksPerStep);
    const ctx = {
      model,
      reward: this.reward,
      runId: this.opts.runId,
      repeatTimes: this.opts.repeatTimes,
      sampling: workflowSampling(this.opts.sampling, model.tokenizer),
      step: this.step,
      seed: o.seed ?? this.rng.int(0, 2 ** 31),
      split: 'train' as const,
      ...(partial ? { partialBudget: partial.maxTokensPerStep } : {}),
    };
    const unfinished = pending.filter(isUnfinished);
    const cont =
      partial && unfinished.length
        ? await continuePartials(unfinished, {
            ...ctx,
            budget: partial.maxTokensPerStep,
            seed: (ctx.seed ^ 0x5bd1e995) >>> 0,
          })
        : { experiences: [], newTokens: [] };
    const fresh = await this.workflow.run(tasks, ctx);
    let raw = fresh;
    let waiting: Experience[] = [];
    if (partial) {
      // Only whole groups go on to the experience pipeline (group advantages over finished trajectories).
      const settled = settleGroups([...pending.filter((e) => !isUnfinished(e)), ...cont.experiences, ...fresh]);
      raw = settled.complete;
      waiting = settled.waiting;
    }
    const verified = this.opts.process ? await this.opts.process(raw) : raw;
    if (partial) await this.sink.append([...verified, ...waiting], { replacing: pending.map((e) => e.id) });
    else await this.sink.append(verified);
    await this.opts.afterStep?.(tasks, model, this.step);
    const ok = raw.filter((e) => e.status === 'ok');
    const m: ExploreMetrics = {
      explore_step: this.step,
      model_version: model.version,
      experiences: raw.length,
      reward_mean: ok.length ? ok.reduce((a, e) => a + e.reward, 0) / ok.length : 0,
      ok: ok.length,
      // Partial rollouts release a group with samples finished by older weights: those past the staleness bound are not takeable.
      trainable: verified.filter(
        (e) =>
          e.status === 'ok' &&
          e.source === 'usual' &&
          (partial?.maxStaleness === undefined || e.modelVersion >= model.version - partial.maxStaleness),
      ).length,
      invalid: raw.filter((e) => e.status === 'invalid').length,
      infra_failure: raw.filter((e) => e.status === 'infra_failure').length,
      rollout_s: (performance.now() - t0) / 1000,
      tokens: fresh.reduce((a, e) => a + e.responseTokens.length, 0) + cont.newTokens.reduce((a, n) => a + n, 0),
    };
    const failed = raw.find((e) => e.status === 'infra_failure' && e.statusReason);
    if (failed) m.infra_reason = failed.statusReason;
    if (partial) {
      m.partial_continued = cont.experiences.length;
      m.partial_finished = cont.experiences.filter((e) => !isUnfinished(e)).length;
      m.partial_pending = waiting.filter(isUnfinished).length;
      m.max_trajectory_tokens = Math.max(0, ...fresh.map((e) => e.responseTokens.length), ...cont.newTokens);
    }
    log.debug('explore step', { ...m });
    this.step++;
    return m;
  }
}
