// Placement `memory`: the whole run in one process with the model shared in memory. The run loop (run-loop.ts: stages, step loop, evaluations, summary) is the one every
// placement runs; this file decides only that each step is explored here (in lockstep, or beside the
// trainer: memory-explorer.ts) with the trainer's weights, and that checkpoints are resume points (with the replay
// of recorded batches after a kill -9). Everything a config turns into comes from setup/.
import { join } from 'node:path';
import { logger } from '../../core/log.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { frozenOutsideHeap, outsideHeapNote } from '../../model/external-weights.js';
import type { Trainer } from '../../trainer/trainer.js';
import { checkStageIndex } from '../../model/checkpoint-meta.js';
import { loadTokenizer, saveTokenizer } from '../../model/tokenizer/index.js';
import { openStore, type ExperienceStore } from '../../buffer/storage/index.js';
import { makeSampler, type Sampler } from '../../buffer/sampler/index.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { workerPool, type SyncedRolloutModel } from '../../explorer/rollout-engine.js';
import { evaluate } from '../evaluate.js';
import { Progress } from '../monitor.js';
import { openStage, runStages, trainStage, type Placement, type StageParts } from '../run-loop.js';
import { exploreNeed } from '../stage-batch.js';
import type { RunSummary } from '../run-types.js';
import type { RunConfig } from '../../core/config.js';
import { runContext, type PlacementContext } from './entry.js';
import { RunState } from '../run-state.js';
import { openExplorerHalf, type ExplorerHalf } from '../explorer-half.js';
import type { Transformer } from '../../model/transformer.js';
import type { Tokenizer } from '../../model/tokenizer/types.js';
import type { TaskPools } from '../setup/tasks.js';
import type { Stage } from '../setup/trainer.js';
import type { FillingExplorer } from '../../explorer/filling-explorer.js';
import { startOverlapExplorer, type OverlapGate, type OverlapStage } from './memory-explorer.js';
import { LockstepExplorer } from './lockstep-explorer.js';
import { loadTasks } from '../setup/tasks.js';
import { publishCheckpoint, seedRun } from '../setup/run-data.js';
import { initialModel, makeTokenizer, tokenizerTexts } from '../setup/model.js';
import { evalOptions, rolloutEngine } from '../setup/explorer.js';
import { stagesOf } from '../setup/trainer.js';
import { importTrainFrom } from '../train-from.js';

const log = logger('coordinator');

export async function executeInProcess(c: PlacementContext): Promise<RunSummary> {
  const { cfg, runDir, dbPath, resumeFrom } = c;
  const pools = await loadTasks(cfg);
  const tok = resumeFrom ? loadTokenizer(runDir) : makeTokenizer(cfg, tokenizerTexts(pools));
  if (!resumeFrom) saveTokenizer(tok, runDir);
  const store: ExperienceStore = await openStore(cfg.buffer.storage === 'sqlite' ? dbPath : cfg.buffer.storage);
  const run = new InProcessRun(c, pools, tok, store);
  try {
    await run.open();
    const { summary } = await runStages(cfg, run, runContext(c, pools, run.state));
    run.model?.dispose();
    return summary;
  } finally {
    await run.close();
    await store.close();
  }
}

/**
 * The memory placement's side of the run loop: every part in this process, weights shared in memory
 * (the rollout model reads the trainer's model; rollout workers get a copy when the version moved).
 */
class InProcessRun implements Placement {
  readonly finalWhenStopped = true;
  model?: Transformer;
  private half?: ExplorerHalf;
  private pool?: SyncedRolloutModel;
  private rollout?: LocalRolloutModel;
  private lockstep?: LockstepExplorer;
  /** sync_offset >= 1 or async: the explorer runs beside the trainer (memory-explorer.ts); null: lockstep. */
  private readonly gate: OverlapGate | null;
  private readonly evalOpts: ReturnType<typeof evalOptions>;
  /** The trainer's version, which is also its steps trained. */
  private version: number;
  private stageIndex: number;
  private resumeStageStep: number;
  /** The run's resume state (run-state.ts), in the run's buffer. */
  readonly state: RunState;
  /** The newest checkpoint folder: the next stage's critic continues the one saved there. */
  private lastCheckpoint: string | undefined;
  /** The stage being run decides the advantage function of fresh experiences. */
  private algorithm: RunConfig['algorithm'];

  constructor(
    private readonly c: PlacementContext,
    private readonly pools: TaskPools,
    private readonly tok: Tokenizer,
    private readonly store: ExperienceStore,
  ) {
    const { cfg, resumeFrom } = c;
    this.evalOpts = evalOptions(cfg);
    this.algorithm = cfg.algorithm;
    this.version = resumeFrom?.meta.version ?? 0;
    // A stage_index past the stages is a bad rft.json, not a finished run.
    this.stageIndex = resumeFrom ? checkStageIndex(resumeFrom.meta, stagesOf(cfg).length, resumeFrom.dir) : 0;
    this.resumeStageStep = typeof resumeFrom?.meta.stage_step === 'number' ? resumeFrom.meta.stage_step : 0;
    // A run from before the state was kept in the buffer had it in its checkpoint's rft.json.
    this.state = new RunState(store, c.runId, {
      startEvaluated: resumeFrom !== undefined,
      base: typeof resumeFrom?.meta.base_accuracy === 'number' ? resumeFrom.meta.base_accuracy : undefined,
    });
    this.lastCheckpoint = resumeFrom?.dir;
    // synchronizer.schedule one_step_off (sync_offset >= 1) or async: the explorer overlaps the trainer.
    this.gate =
      cfg.synchronizer.schedule === 'async'
        ? { kind: 'async', lead: cfg.buffer.max_staleness }
        : cfg.synchronizer.sync_offset > 0
          ? { kind: 'offset', offset: cfg.synchronizer.sync_offset }
          : null;
  }

  /** The run's rows, its explorer half, the model it starts from and the rollout engine. */
  async open(): Promise<void> {
    const { cfg, runId, metrics, resumeFrom } = this.c;
    const { pools, tok, store } = this;
    if (!resumeFrom) await seedRun(store, runId, pools, tok);
    // A resumed run continues the selector and the explore step numbers where it stopped.
    this.half = await openExplorerHalf({
      cfg,
      runId,
      store,
      pools,
      tok,
      metrics,
      algorithm: () => this.algorithm,
      seed: cfg.seed + 1,
      restore: resumeFrom !== undefined,
      numberSteps: true,
      watch: true,
    });
    // buffer.train_from: another run's rows, copied in before any stage reads (a resume finds them there).
    if (cfg.buffer.train_from) await importTrainFrom(store, runId, cfg.buffer.train_from);
    // A resumed LoRA run loads its frozen base outside the wasm heap, as its start did (setup/model.ts initialModel).
    const model = resumeFrom
      ? loadCheckpoint(resumeFrom.dir, { external: frozenOutsideHeap(cfg.model.lora) }).model
      : initialModel(cfg, tok, [...pools.train, ...pools.eval]);
    this.model = model;
    const note = resumeFrom && outsideHeapNote(model);
    if (note) log.info(`resumed from v${resumeFrom!.meta.version}: ${note}`);
    this.rollout = new LocalRolloutModel(model, tok, this.version);
    // explorer.workers > 1 (worker threads with copies of the weights) or explorer.engine llama-cpp
    // (a GGUF of each version): weights sent after every update. Overlapped, the explorer needs at
    // least one rollout worker thread, or nothing would run beside the trainer on the main thread.
    const gate = this.gate;
    this.pool =
      rolloutEngine(cfg, model.config, tok, { overlap: !!gate }) ??
      (gate ? workerPool({ workers: 1, config: model.config, tokenizer: tok, overlap: true }) : undefined);
    // Lockstep (no overlap gate): each step explored with the trainer's weights before it trains.
    this.lockstep = new LockstepExplorer({
      store,
      runId,
      explorer: this.half.explorer,
      resumed: resumeFrom !== undefined,
      version: () => this.version,
      model: async () => {
        const pool = this.pool;
        if (pool && pool.version !== this.version) await pool.setWeights(model, this.version);
        return pool ?? this.rollout!;
      },
    });
  }

  async close(): Promise<void> {
    await this.half?.close();
    await this.pool?.close();
  }

  async nextStage(): Promise<number> {
    return this.stageIndex;
  }

  // explorer.engine auto (the explorer not beside the trainer): evaluations sample with the engine auto picks for their batch too.
  async evaluate() {
    const auto = this.c.cfg.explorer.engine === 'auto' && !this.gate ? this.pool : undefined;
    if (auto && auto.version !== this.version) await auto.setWeights(this.model!, this.version);
    const result = await evaluate(auto ?? this.rollout!, this.pools.eval, this.pools.reward, this.evalOpts);
    return { result, step: this.version };
  }

  async finish() {
    return {
      trainerSteps: this.version,
      exploreSteps: this.half!.explorer.step,
      checkpoint: join(this.c.runDir, 'checkpoints', `v${this.version}`),
    };
  }

  /** A resume point: the weights (and the stage's critic) at the current version, where a resume continues. */
  private async checkpoint(
    si: number,
    stageStep: number,
    stageName: string,
    critic?: Pick<Trainer, 'critic' | 'criticOptimizer' | 'lrState'>,
  ): Promise<void> {
    const { runId, runDir, registry } = this.c;
    const version = this.version;
    const dir = join(runDir, 'checkpoints', `v${version}`);
    const meta = { version, step: version, stage: stageName, stage_index: si, stage_step: stageStep };
    await publishCheckpoint({
      store: this.store,
      runId,
      model: this.model!,
      tok: this.tok,
      dir,
      meta: { ...meta, base_accuracy: await this.state.base() },
      critic,
    });
    this.lastCheckpoint = dir;
    await registry.addCheckpoint(runId, { version, path: dir, step: version });
    await registry.setLastStep(runId, version);
  }

  /** Overlapped (gate set, the stage explores): the stage's explorer, started beside the trainer. */
  private async startOverlap(
    stage: Stage,
    parts: StageParts,
    trainerStop: AbortController,
  ): Promise<OverlapStage | undefined> {
    const { cfg, metrics } = this.c;
    const pool = this.pool;
    if (!this.gate || !parts.explores || !pool) return undefined;
    if (pool.version !== this.version) await pool.setWeights(this.model!, this.version);
    const sc = parts.samplerConfig;
    return startOverlapExplorer({
      explorer: this.half!.explorer,
      pool,
      gate: this.gate,
      // Each explore step yields the usual share of the stage's batch (refilled when short).
      need: exploreNeed(cfg, stage, sc.type === 'mixed' ? (sc.expertRatio ?? 0) : 0),
      trainerVersion: () => this.version,
      stageName: stage.name,
      metrics,
      trainerStop,
    });
  }

  /** The warning of an explore step that made no trainable rollout: the run stopped on it. */
  private noTrainable?: string;
  stopReason(): string | undefined {
    return this.noTrainable;
  }

  async runStage(si: number, stage: Stage): Promise<boolean> {
    const { cfg, runId, metrics, opts } = this.c;
    const model = this.model!;
    const explorer: FillingExplorer = this.half!.explorer;
    this.algorithm = stage.algorithm;
    // The reference model is the policy as it enters the stage (e.g. the SFT warm-up result), frozen.
    const parts = await openStage(
      cfg,
      stage,
      model,
      this.tok,
      this.store,
      runId,
      () => model.clone(),
      this.lastCheckpoint,
    );
    const sampler: Sampler = makeSampler(this.store, parts.samplerConfig);
    const stageStart = Date.now();
    const progress = opts.progress
      ? new Progress(stage.steps ?? Math.round(stage.wall_seconds ?? 0), `${stage.name} (${parts.objective.name})`)
      : undefined;
    metrics.write({ kind: 'stage', stage: stage.name, algorithm: parts.objective.name });
    // A resumed stage continues at its step; its wall-clock budget counts from the resume.
    const s0 = this.resumeStageStep;
    this.resumeStageStep = 0;
    let trainS = 0;
    let s = s0;
    // The trainer stops on the run's signal, or when the overlapped explorer failed (its error is thrown below).
    const trainerStop = new AbortController();
    const onAbort = () => trainerStop.abort();
    if (opts.signal?.aborted) trainerStop.abort();
    opts.signal?.addEventListener('abort', onAbort);
    // An explore step that made no trainable rollout in maxBarrenRounds refill rounds stops the run,
    // with its warning, rather than refilling forever (explorer/filling-explorer.ts).
    explorer.onNoTrainable = (w) => {
      // Said once: an overlapped explorer may give up on a second step before the trainer stops.
      if (this.noTrainable) return;
      this.noTrainable = w.message;
      metrics.write({
        kind: 'warning',
        code: 'no_trainable_rollout',
        stage: stage.name,
        step: w.step,
        message: w.message,
        values: w.values,
        no_trainable_rounds: w.rounds,
      });
      trainerStop.abort();
    };
    const overlap = await this.startOverlap(stage, parts, trainerStop);
    // In lockstep a stop also ends the refill rounds of the step being explored.
    if (!overlap) explorer.signal = trainerStop.signal;
    const pool = this.pool;
    let r: Awaited<ReturnType<typeof trainStage>>;
    try {
      r = await trainStage(
        {
          cfg,
          stage,
          model,
          tok: this.tok,
          evalTasks: this.pools.eval,
          reward: this.pools.reward,
          metrics,
          step: this.version,
          stageStep: s0,
        },
        parts,
        {
          sampler,
          syncInterval: 1,
          sampleTimeoutMs: 60_000,
          signal: trainerStop.signal,
          // Overlapped: the explorer feeds the buffer beside the trainer, whose reads wait for a batch.
          explore: overlap
            ? undefined
            : this.lockstep!.explore(parts, sampler, (rec) =>
                // Numbered by the trainer step it feeds (the explorer's own count skips steps that did not
                // explore), whose weights it used: never ahead.
                metrics.write({
                  ...rec,
                  stage: stage.name,
                  step: this.version,
                  ahead: 0,
                  ...(pool ? { rollout: pool.metrics() } : {}),
                }),
              ),
          // In lockstep (sync_offset 0) the explorer waits while the trainer trains and vice versa;
          // overlapped, the explorer's own counters (waiting for weights; async: for buffer room).
          stateExtra: () =>
            overlap
              ? { explorer_idle: overlap.last.idle, explorer_backpressure: overlap.last.backpressure }
              : { explorer_idle: parts.explores ? trainS / Math.max(1e-9, (Date.now() - stageStart) / 1000) : 1 },
          onMetrics: (rec) => {
            metrics.write(rec);
            if (rec.kind !== 'train') return;
            trainS += Number(rec.time_total_s) || 0;
            s++;
            const elapsed = (Date.now() - stageStart) / 1000;
            progress?.update(
              stage.steps !== undefined ? s : Math.min(Math.round(elapsed), stage.wall_seconds ?? 0),
              `loss ${Number(rec.loss).toFixed(3)}`,
            );
          },
          publishWeights: async (v, stageStep, stageDone) => {
            // Overlapped: the rollout workers get v now, a consistent copy (no optimiser step runs
            // while the trainer awaits this), before the explorer's gate sees the new version.
            if (overlap) await overlap.pool.setWeights(model, v);
            this.version = v;
            this.rollout!.version = v;
            // The stage is done: a resume starts at the next one.
            if (stageDone) await this.checkpoint(si + 1, 0, stage.name, parts.trainer);
            else if (stageStep % (opts.checkpointEvery ?? 20) === 0)
              await this.checkpoint(si, stageStep, stage.name, parts.trainer);
          },
        },
      );
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      explorer.onNoTrainable = undefined;
      // The step in flight finishes and is stored (a resume finds it in the buffer).
      if (overlap) {
        overlap.stop.abort();
        await overlap.done;
      }
    }
    if (overlap?.error) throw overlap.error;
    progress?.done();
    // The stop's checkpoint holds the critic too: saved before the stage's parts are disposed.
    if (!r.stageDone) {
      await this.checkpoint(si, r.stageStep, stage.name, parts.trainer);
      parts.dispose();
      return true;
    }
    parts.dispose();
    this.stageIndex = si + 1;
    return false;
  }
}
