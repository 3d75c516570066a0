// The explorer: picks tasks, runs the workflow on the current rollout model, passes the raw
// experiences through the experience pipeline and appends them to the buffer. One `step` is one
// batch of tasks x repeat_times samples.
import type { Experience, Task } from '../core/types.js';
import { Rng } from '../core/rng.js';
import { logger } from '../core/log.js';
import type { RewardFn, RolloutModel, SamplingConfig, Workflow } from './workflow.js';

const log = logger('explorer');

export interface TaskSource {
  next(n: number): Task[];
}

/** Where verified experiences go (the buffer), and the raw -> verified step before it. */
export interface ExperienceSink {
  append(exps: Experience[]): Promise<void>;
}

export interface ExplorerOptions {
  runId: string;
  tasksPerStep: number;
  repeatTimes: number;
  sampling: SamplingConfig;
  seed: number;
  /** Raw -> verified (validity, filters, shaping, advantages). */
  process?: (exps: Experience[]) => Experience[] | Promise<Experience[]>;
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
  rollout_s: number;
  tokens: number;
}

export class Explorer {
  step = 0;
  private readonly rng: Rng;

  constructor(
    private readonly workflow: Workflow,
    private readonly reward: RewardFn,
    private readonly tasks: TaskSource,
    private readonly sink: ExperienceSink,
    private readonly opts: ExplorerOptions,
  ) {
    this.rng = new Rng(opts.seed);
  }

  async exploreStep(model: RolloutModel): Promise<ExploreMetrics> {
    const t0 = performance.now();
    const tasks = this.tasks.next(this.opts.tasksPerStep);
    const raw = await this.workflow.run(tasks, {
      model,
      reward: this.reward,
      runId: this.opts.runId,
      repeatTimes: this.opts.repeatTimes,
      sampling: this.opts.sampling,
      step: this.step,
      seed: this.rng.int(0, 2 ** 31),
      split: 'train',
    });
    const verified = this.opts.process ? await this.opts.process(raw) : raw;
    await this.sink.append(verified);
    await this.opts.afterStep?.(tasks, model, this.step);
    const ok = raw.filter((e) => e.status === 'ok');
    const m: ExploreMetrics = {
      explore_step: this.step,
      model_version: model.version,
      experiences: raw.length,
      reward_mean: ok.length ? ok.reduce((a, e) => a + e.reward, 0) / ok.length : 0,
      ok: ok.length,
      trainable: verified.filter((e) => e.status === 'ok' && e.source === 'usual').length,
      invalid: raw.filter((e) => e.status === 'invalid').length,
      infra_failure: raw.filter((e) => e.status === 'infra_failure').length,
      rollout_s: (performance.now() - t0) / 1000,
      tokens: raw.reduce((a, e) => a + e.responseTokens.length, 0),
    };
    log.debug('explore step', { ...m });
    this.step++;
    return m;
  }
}
