// Placement `distributed`, the trainer's side (distributed.ts sets it up: lease, heartbeat, weights,
// metrics): this process trains every stage; explorers on any machine lease the jobs of exploring
// stages from the queue and ack their experiences into the buffer; weights go out as sha256-verified
// versions (HTTP from here, the shared folder or the object store) announced by NOTIFY.
import type { RunConfig } from '../../core/config.js';
import type { Task } from '../../core/types.js';
import { logger } from '../../core/log.js';
import { saveCheckpoint } from '../../model/checkpoint.js';
import type { Transformer } from '../../model/transformer.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { PostgresStore } from '../../buffer/storage/postgres.js';
import type { ExperienceStore } from '../../buffer/storage/types.js';
import { makeSampler } from '../../buffer/sampler/index.js';
import type { JobQueue } from '../../buffer/queue/job-queue.js';
import { withRetry, type RetryOptions } from '../../buffer/queue/retry.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import type { RewardFn } from '../../explorer/workflow.js';
import { evaluate, type EvalResult } from '../evaluate.js';
import type { RunMetricsLog } from '../distributed/run-metrics.js';
import { evalOptions } from '../setup/explorer.js';
import { stageCheckpointMeta } from '../setup/run-data.js';
import type { Stage } from '../setup/trainer.js';
import { openStage, trainStage, type Placement } from '../run-loop.js';
import { jobSync } from '../distributed/jobs-plan.js';
import type { PlannedSelector } from '../distributed/selector-plan.js';
import { FeedingSampler } from '../distributed/feeding-sampler.js';
import type { LinkWatch } from '../distributed/link-watch.js';
import type { SynthesisHook } from '../task-synthesis.js';
import { checksumDir, loadVerified, pruneVersions, versionDir } from '../distributed/weights.js';
import type { WeightsServer } from '../distributed/weights-http.js';
import type { TrainerWeights } from '../distributed/weights-trainer.js';

const log = logger('dist-trainer');

/** What the trainer's heartbeat row shows; the run updates it as it goes. */
/**
 * While publishing version v fails, the trainer's row is `error` with the last failure (`rft workers`
 * showed `syncing` and nothing else while S3 was down, issue 40 item 16); done() puts its state back.
 */
export function publishFailures(
  status: TrainerStatus,
  v: number,
  where: string,
): { onFail: (e: Error, attempt: number) => void; done: () => void } {
  const was = { state: status.state, detail: status.detail };
  return {
    onFail: (e, n) => {
      status.state = 'error';
      status.detail = `publishing v${v} to ${where} (attempt ${n}): ${e.message}; retrying`;
    },
    done: () => {
      if (status.state === 'error') Object.assign(status, was);
    },
  };
}

export interface TrainerStatus {
  state: string;
  detail: string;
  /** The newest published version (null before the start checkpoint is loaded). */
  version: number | null;
  /** Steps this process trained. */
  steps: number;
}

export interface DistributedRunParts {
  runId: string;
  cfg: RunConfig;
  stages: Stage[];
  /** Each stage's first version. */
  starts: number[];
  /** The run's store (reconnecting), its raw connection (lease renewals) and the job queue. */
  store: ExperienceStore;
  raw: PostgresStore;
  q: JobQueue;
  retry: RetryOptions;
  link: LinkWatch;
  signal: AbortSignal;
  tw: TrainerWeights;
  weightsDir: string;
  server: WeightsServer | null;
  model: Transformer;
  tok: Tokenizer;
  /** Frozen base weights outside the wasm heap (LoRA), as the run's start loaded them. */
  external: boolean;
  evalTasks: Task[];
  reward: RewardFn;
  metrics: RunMetricsLog;
  /** The run's tasks (synthesis appends accepted ones). */
  tasks: Task[];
  planner: PlannedSelector | undefined;
  synth: SynthesisHook | undefined;
  status: TrainerStatus;
  /** Where the run stands: the stage of the newest checkpoint, its step in that stage. */
  stageIndex: number;
  stageStep: number;
  /** The newest checkpoint folder on this host (a PPO stage continues the critic saved there). */
  criticFrom: string;
  /** Explore steps of the run so far (records of earlier trainers, on any host). */
  exploreSteps: number;
}

export class DistributedRun implements Placement {
  readonly finalWhenStopped = false;
  /** Top-up jobs queued for steps whose groups came back short. */
  topUps = 0;
  /** The last stage's idle fraction (waiting for experiences). */
  idle = 0;
  exploreSteps: number;
  private stageIndex: number;
  private resumeStageStep: number;
  private criticFrom: string;
  /** Stage starts stay on disk: the reference of a stage resumed in the middle is loaded from there. */
  private readonly keep = new Set<number>([0]);

  constructor(private readonly p: DistributedRunParts) {
    this.stageIndex = p.stageIndex;
    this.resumeStageStep = p.stageStep;
    this.criticFrom = p.criticFrom;
    this.exploreSteps = p.exploreSteps;
  }

  private get version(): number {
    return this.p.status.version!;
  }

  async nextStage(): Promise<number> {
    return this.stageIndex;
  }

  async evaluate(label: string): Promise<{ result: EvalResult; step: number }> {
    const { p } = this;
    p.status.state = 'evaluating';
    p.status.detail = `${label}: ${p.evalTasks.length} task(s) with v${this.version}`;
    return {
      result: await evaluate(
        new LocalRolloutModel(p.model, p.tok, this.version),
        p.evalTasks,
        p.reward,
        evalOptions(p.cfg),
      ),
      step: this.version,
    };
  }

  async runStage(si: number, stage: Stage): Promise<boolean> {
    const { p } = this;
    const { cfg, model, tok, store, runId } = p;
    const stageStep = this.resumeStageStep;
    this.resumeStageStep = 0;
    const stageStart = p.starts[si]!;
    this.keep.add(stageStart);
    const startCk = (await store.listCheckpoints(runId)).find((c) => c.version === stageStart);
    // A stage resumed in the middle: its start on this host (fetched from the database or the object
    // store when this is not the machine that wrote it), for the reference.
    const startPath =
      startCk && startCk.version !== this.version
        ? await p.tw
            .local(startCk)
            .catch(
              (e: Error) => (
                log.warn(`stage start v${startCk.version}: ${e.message}; the reference is the current weights`), null
              ),
            )
        : null;
    const parts = await openStage(
      cfg,
      stage,
      model,
      tok,
      store,
      runId,
      () => (startPath ? loadVerified(startPath, startCk!.checksum, { external: p.external }).model : model.clone()),
      this.criticFrom,
    );
    if (stageStep === 0)
      p.metrics.write({ kind: 'stage', stage: stage.name, algorithm: parts.objective.name, distributed: true });
    // Scoped by run: another run in the same database is never sampled nor its recorded batches replayed.
    const inner = makeSampler(store, parts.samplerConfig);
    // An exploring stage queues the jobs of its steps (never past its end); a train-only stage samples expert data.
    const feeding = parts.explores
      ? new FeedingSampler(
          inner,
          p.q,
          runId,
          {
            tasks: p.tasks,
            seed: cfg.seed,
            selector: cfg.taskset.selector,
            tasksPerStep: cfg.explorer.tasks_per_step,
            end: stage.steps === undefined ? undefined : stageStart + stage.steps,
            ...jobSync(cfg, stageStart),
          },
          cfg.explorer.repeat_times,
          p.planner,
          p.link,
        )
      : undefined;
    const synth = p.synth;
    if (feeding && synth)
      feeding.afterBatch = (step, exps) => {
        const byId = new Map(p.tasks.map((t) => [t.id, t]));
        const parents = [...new Set(exps.filter((e) => e.source === 'usual').map((e) => e.taskId))].flatMap(
          (id) => byId.get(id) ?? [],
        );
        return synth.afterStep(parents, new LocalRolloutModel(model, tok, this.version), step);
      };
    log.info(
      `run ${runId}: stage ${stage.name} (${parts.objective.name}) from v${this.version} (step ${stageStep} of ${stage.steps}), batch ${parts.batchSize}`,
    );
    // Every step goes to metrics.jsonl; the log gets a line per step at most every 5 s (and the last).
    let logged = 0;
    const r = await trainStage(
      {
        cfg,
        stage,
        model,
        tok,
        evalTasks: p.evalTasks,
        reward: p.reward,
        metrics: p.metrics,
        step: this.version,
        stageStep,
      },
      parts,
      {
        sampler: feeding ?? inner,
        syncInterval: cfg.synchronizer.sync_interval,
        signal: p.signal,
        onMetrics: (rec) => {
          if (rec.kind !== 'train') return p.metrics.write(rec);
          p.status.steps++;
          if (parts.explores) this.exploreSteps++;
          const usual = (feeding?.last ?? []).filter((e) => e.source === 'usual');
          const rewardMean = usual.length ? usual.reduce((x, e) => x + e.reward, 0) / usual.length : null;
          p.metrics.write({
            ...rec,
            explored: parts.explores,
            reward_mean: rewardMean,
            full_reward: usual.length ? usual.filter((e) => e.reward >= 1).length / usual.length : null,
          });
          const n = Number(rec.step) + 1 - stageStart;
          if (Date.now() - logged >= 5000 || n >= (stage.steps ?? Infinity)) {
            logged = Date.now();
            log.info(
              `${stage.name} step ${n}${stage.steps === undefined ? '' : `/${stage.steps}`}: loss ${Number(rec.loss).toFixed(4)}, batch reward ${rewardMean === null ? '-' : rewardMean.toFixed(3)}, waited ${Number(rec.waited_s).toFixed(2)} s`,
            );
          }
        },
        onState: (s, d) => {
          p.status.state = s;
          p.status.detail = d ?? '';
        },
        publishWeights: (v, sStep, done) =>
          this.publish(v, stageCheckpointMeta(v, stage.name, si, sStep, done), {
            critic: parts.trainer.critic,
            criticOptimizer: parts.trainer.criticOptimizer,
            lrState: () => parts.trainer.lrState(),
          }),
      },
    );
    parts.dispose();
    this.topUps += feeding?.topUps ?? 0;
    this.idle = r.idle;
    if (!r.stageDone) return true;
    this.stageIndex = si + 1;
    return false;
  }

  /**
   * Version v out: saved on this host, servable over HTTP, uploaded to the object store, its record
   * (naming the checksum) written last, then NOTIFY. Not publishCheckpoint: the version is uploaded and
   * checksummed before its record names it.
   */
  private async publish(
    v: number,
    meta: ReturnType<typeof stageCheckpointMeta>,
    critic: NonNullable<Parameters<typeof saveCheckpoint>[4]>,
  ): Promise<void> {
    const { p } = this;
    const { runId, cfg } = p;
    const dir = versionDir(p.weightsDir, runId, v);
    await saveCheckpoint(p.model, dir, meta, p.tok, critic);
    this.criticFrom = dir;
    const checksum = checksumDir(dir);
    p.server?.add(checksum, dir); // servable before any explorer hears of it
    // Still the holder? Then upload and prune in the object store; the record's epoch compare below is the guarantee.
    await withRetry(() => p.raw.renewTrainerLease(runId, `checkpoint v${v} (upload and record)`), p.retry);
    // In the object store before its record names it. While the store fails, the trainer's row is in
    // `error` with the last failure (`rft workers` used to show `syncing` and nothing else).
    const shown = publishFailures(p.status, v, p.tw.object?.where ?? 'the object store');
    await p.tw.publish(v, dir, checksum, cfg.buffer.max_staleness + 3, this.keep, shown.onFail);
    shown.done();
    await p.metrics.flush(); // the curve up to this version is stored before its record names it
    await p.store.addCheckpoint({ runId, version: v, path: dir, checksum, createdAt: Date.now() });
    p.status.version = v;
    await withRetry(() => p.q.notifyWeights(runId, v), p.retry);
    pruneVersions(p.weightsDir, runId, v, cfg.buffer.max_staleness + 3, this.keep);
  }

  /** Explorers stop on dist:done; the final evaluation runs after it, on a quiet machine. */
  async beforeFinal(completed: boolean): Promise<void> {
    if (completed) await this.p.store.setState(this.p.runId, 'dist:done', { step: this.version, at: Date.now() });
  }

  async finish(): Promise<{ trainerSteps: number; exploreSteps: number; checkpoint: string }> {
    return {
      trainerSteps: this.version,
      exploreSteps: this.exploreSteps,
      checkpoint: versionDir(this.p.weightsDir, this.p.runId, this.version),
    };
  }
}
