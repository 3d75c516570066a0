// Placement `memory` (synchronizer memory): the whole run in one process with the model shared in
// memory. The run loop (run-loop.ts: stages, step loop, evaluations, summary) is the one every
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
import '../../explorer/workflows/index.js';
import { evaluate } from '../evaluate.js';
import { Progress } from '../monitor.js';
import { openStage, runStages, trainStage, type Placement } from '../run-loop.js';
import { exploreNeed } from '../stage-batch.js';
import type { RunSummary } from '../run-types.js';
import type { PlacementContext } from './entry.js';
import { openExplorerHalf, type ExplorerHalf } from '../explorer-half.js';
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
  const { opts, cfg, runId, runDir, dbPath, registry, metrics, t0, resumeFrom } = c;
  const pools = loadTasks(cfg);
  const tok = resumeFrom ? loadTokenizer(runDir) : makeTokenizer(cfg, tokenizerTexts(pools));
  if (!resumeFrom) saveTokenizer(tok, runDir);
  const storeUrl = cfg.buffer.storage === 'sqlite' ? dbPath : cfg.buffer.storage;
  const store: ExperienceStore = await openStore(storeUrl);
  let pool: SyncedRolloutModel | undefined;
  let half: ExplorerHalf | undefined;
  try {
    if (!resumeFrom) await seedRun(store, runId, pools, tok);
    // The stage being run decides the advantage function of fresh experiences.
    let currentAlgorithm = cfg.algorithm;
    // A resumed run continues the selector and the explore step numbers where it stopped.
    half = await openExplorerHalf({
      cfg,
      runId,
      store,
      pools,
      tok,
      metrics,
      algorithm: () => currentAlgorithm,
      seed: cfg.seed + 1,
      restore: resumeFrom !== undefined,
      numberSteps: true,
      watch: true,
    });
    const { explorer } = half;
    // buffer.train_from: another run's rows, copied in before any stage reads (a resume finds them there).
    if (cfg.buffer.train_from) await importTrainFrom(store, runId, cfg.buffer.train_from);

    // A resumed LoRA run loads its frozen base outside the wasm heap, as its start did (setup/model.ts initialModel).
    const model = resumeFrom
      ? loadCheckpoint(resumeFrom.dir, { external: frozenOutsideHeap(cfg.model.lora) }).model
      : initialModel(cfg, tok, [...pools.train, ...pools.eval]);
    const note = resumeFrom && outsideHeapNote(model);
    if (note) log.info(`resumed from v${resumeFrom!.meta.version}: ${note}`);
    let version = resumeFrom?.meta.version ?? 0;
    const rollout = new LocalRolloutModel(model, tok, version);
    // explorer.workers > 1 (worker threads with copies of the weights) or explorer.engine llama-cpp
    // (a GGUF of each version): weights sent after every update.
    // synchronizer.mode one_step_off (sync_offset >= 1) or async: the explorer overlaps the trainer
    // (memory-explorer.ts); it needs at least one rollout worker thread, or nothing would run beside
    // the trainer on the main thread.
    const gate: OverlapGate | null =
      cfg.synchronizer.mode === 'async'
        ? { kind: 'async', lead: cfg.buffer.max_staleness }
        : cfg.synchronizer.sync_offset > 0
          ? { kind: 'offset', offset: cfg.synchronizer.sync_offset }
          : null;
    pool =
      rolloutEngine(cfg, model.config, tok, { overlap: !!gate }) ??
      (gate ? workerPool({ workers: 1, config: model.config, tokenizer: tok, overlap: true }) : undefined);
    const evalOpts = evalOptions(cfg);
    const stages = stagesOf(cfg);

    let baseAcc: number | undefined =
      typeof resumeFrom?.meta.base_accuracy === 'number' ? resumeFrom.meta.base_accuracy : undefined;
    let totalSteps = resumeFrom?.meta.step ?? 0;
    // A stage_index past the stages is a bad rft.json, not a finished run.
    let stageIndex = resumeFrom ? checkStageIndex(resumeFrom.meta, stages.length, resumeFrom.dir) : 0;
    let resumeStageStep = typeof resumeFrom?.meta.stage_step === 'number' ? resumeFrom.meta.stage_step : 0;
    const checkpointEvery = opts.checkpointEvery ?? 20;
    // Lockstep (no overlap gate): each step explored with the trainer's weights before it trains.
    const lockstep = new LockstepExplorer({
      store,
      runId,
      explorer,
      resumed: resumeFrom !== undefined,
      version: () => version,
      step: () => totalSteps,
      model: async () => {
        if (pool && pool.version !== version) await pool.setWeights(model, version);
        return pool ?? rollout;
      },
    });
    // The newest checkpoint folder: the next stage's critic continues the one saved there.
    let lastCheckpoint = resumeFrom?.dir;
    const checkpoint = async (
      si: number,
      stageStep: number,
      stageName: string,
      critic?: Pick<Trainer, 'critic' | 'criticOptimizer'>,
    ) => {
      const dir = join(runDir, 'checkpoints', `v${version}`);
      const meta = { version, step: totalSteps, stage: stageName, stage_index: si, stage_step: stageStep };
      await publishCheckpoint({ store, runId, model, tok, dir, meta: { ...meta, base_accuracy: baseAcc }, critic });
      lastCheckpoint = dir;
      await registry.addCheckpoint(runId, { version, path: dir, step: totalSteps });
      await registry.setLastStep(runId, totalSteps);
      return dir;
    };

    // Placement `memory`: every part in this process, weights shared in memory (the rollout model
    // reads the trainer's model; rollout workers get a copy when the version moved).
    const placement: Placement = {
      nextStage: async () => stageIndex,
      startEvaluated: async () => resumeFrom !== undefined,
      getBase: async () => baseAcc,
      setBase: async (a) => {
        baseAcc = a;
      },
      // explorer.engine auto (the explorer not beside the trainer): evaluations sample with the engine auto picks for their batch too.
      evaluate: async () => {
        const auto = cfg.explorer.engine === 'auto' && !gate ? pool : undefined;
        if (auto && auto.version !== version) await auto.setWeights(model, version);
        return { result: await evaluate(auto ?? rollout, pools.eval, pools.reward, evalOpts), step: version };
      },
      finalWhenStopped: true,
      runStage: async (si, stage) => {
        currentAlgorithm = stage.algorithm;
        // The reference model is the policy as it enters the stage (e.g. the SFT warm-up result), frozen.
        const parts = await openStage(cfg, stage, model, tok, store, runId, () => model.clone(), lastCheckpoint);
        const sampler: Sampler = makeSampler(store, parts.samplerConfig);
        const stageStart = Date.now();
        const progress = opts.progress
          ? new Progress(stage.steps ?? Math.round(stage.wall_seconds ?? 0), `${stage.name} (${parts.objective.name})`)
          : undefined;
        metrics.write({ kind: 'stage', stage: stage.name, algorithm: parts.objective.name });
        // A resumed stage continues at its step; its wall-clock budget counts from the resume.
        const s0 = resumeStageStep;
        resumeStageStep = 0;
        let trainS = 0;
        let s = s0;
        // The trainer stops on the run's signal, or when the overlapped explorer failed (its error is thrown below).
        const trainerStop = new AbortController();
        const onAbort = () => trainerStop.abort();
        if (opts.signal?.aborted) trainerStop.abort();
        opts.signal?.addEventListener('abort', onAbort);
        let overlap: OverlapStage | undefined;
        if (gate && parts.explores && pool) {
          if (pool.version !== version) await pool.setWeights(model, version);
          const sc = parts.samplerConfig;
          overlap = startOverlapExplorer({
            explorer,
            pool,
            gate,
            // Each explore step yields the usual share of the stage's batch (refilled when short).
            need: exploreNeed(cfg, stage, sc.type === 'mixed' ? (sc.expertRatio ?? 0) : 0),
            trainerVersion: () => version,
            stageName: stage.name,
            metrics,
            trainerStop,
          });
        }
        // In lockstep a stop also ends the refill rounds of the step being explored.
        if (!overlap) explorer.signal = trainerStop.signal;
        let r: Awaited<ReturnType<typeof trainStage>>;
        try {
          r = await trainStage(
            {
              cfg,
              stage,
              model,
              tok,
              evalTasks: pools.eval,
              reward: pools.reward,
              metrics,
              step: totalSteps,
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
                : lockstep.explore(parts, sampler, (rec) =>
                    // Numbered by the trainer step it feeds (the explorer's own count skips steps that did not
                    // explore), whose weights it used: never ahead.
                    metrics.write({
                      ...rec,
                      stage: stage.name,
                      step: totalSteps,
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
                version = v;
                totalSteps = v;
                rollout.version = v;
                // The stage is done: a resume starts at the next one.
                if (stageDone) await checkpoint(si + 1, 0, stage.name, parts.trainer);
                else if (stageStep % checkpointEvery === 0) await checkpoint(si, stageStep, stage.name, parts.trainer);
              },
            },
          );
        } finally {
          opts.signal?.removeEventListener('abort', onAbort);
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
          await checkpoint(si, r.stageStep, stage.name, parts.trainer);
          parts.dispose();
          return true;
        }
        parts.dispose();
        stageIndex = si + 1;
        return false;
      },
      finish: async () => ({
        trainerSteps: totalSteps,
        exploreSteps: explorer.step,
        checkpoint: join(runDir, 'checkpoints', `v${version}`),
      }),
    };
    const { summary } = await runStages(cfg, placement, {
      runId,
      runDir,
      metrics,
      t0,
      signal: opts.signal,
      // monitor.report: false writes no HTML report (the summary's report is then '').
      reportFile: cfg.monitor.report ? join(runDir, 'report.html') : '',
      reportTitle: `RFT Studio run ${runId}`,
      evalSet: { note: pools.evalSet, tasks: pools.eval.length },
    });
    model.dispose();
    return summary;
  } finally {
    await half?.close();
    await pool?.close();
    await store.close();
  }
}
