// Synchronizer `memory`: the whole run in one process with the model shared in memory. The stages
// of a config (e.g. SFT warm-up, then MIX), explore -> experience pipeline -> buffer -> sample ->
// train in lockstep, evaluation on the held-out split, metrics, checkpoints and the HTML report.
// Everything a config turns into comes from setup.ts, as in the other process models.
import { join } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import { logger } from '../../core/log.js';
import { Transformer } from '../../model/transformer.js';
import { loadCheckpoint, saveCheckpoint, type CheckpointMeta } from '../../model/checkpoint.js';
import { checkStageIndex } from '../../model/checkpoint-meta.js';
import { loadTokenizer, saveTokenizer } from '../../model/tokenizer/index.js';
import { openStore, type ExperienceStore } from '../../buffer/storage/index.js';
import type { RunRegistry } from '../../buffer/runs.js';
import type { SelectorState } from '../../buffer/taskset/index.js';
import { makeSampler, type Sampler } from '../../buffer/sampler/index.js';
import { Explorer } from '../../explorer/explorer.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import type { SyncedRolloutModel } from '../../explorer/rollout-engine.js';
import { workflows } from '../../explorer/workflow.js';
import '../../explorer/workflows/index.js';
import { Trainer } from '../../trainer/trainer.js';
import { stageProgress } from '../../trainer/worker.js';
import { makeObjective } from '../../trainer/objectives.js';
import { evaluate, type EvalResult } from '../evaluate.js';
import { Progress, writeReport, type MetricsLog } from '../monitor.js';
import type { RunOptions, RunSummary } from '../run-types.js';
import { watchRunFiles, type LiveFiles } from '../live.js';
import { evalOptions, rolloutEngine, expertExperience, experiencePipeline, explorerOptions, initialModel, loadTasks, makeTokenizer, processExperiences, samplerConfig, stageBatchSize, stagesOf, TaskFeed, tokenizerTexts, trainerOptions } from '../setup.js';

const log = logger('coordinator');

export async function executeInProcess(
  opts: RunOptions,
  cfg: RunConfig,
  runId: string,
  runDir: string,
  dbPath: string,
  registry: RunRegistry,
  metrics: MetricsLog,
  t0: number,
  resumeFrom?: { dir: string; meta: CheckpointMeta },
): Promise<RunSummary> {
  const pools = loadTasks(cfg);
  const tok = resumeFrom ? loadTokenizer(runDir) : makeTokenizer(cfg, tokenizerTexts(pools));
  if (!resumeFrom) saveTokenizer(tok, runDir);
  const storeUrl = cfg.buffer.storage === 'sqlite' ? dbPath : cfg.buffer.storage;
  const store: ExperienceStore = await openStore(storeUrl);
  let pool: SyncedRolloutModel | undefined;
  let live: LiveFiles | undefined;
  try {
    if (!resumeFrom) await store.putTasks(runId, pools.train);
    if (!resumeFrom && pools.experts.length) await store.appendExperiences(pools.experts.map((t) => expertExperience(tok, runId, t, pools.solve(t))));

    const model = resumeFrom ? loadCheckpoint(resumeFrom.dir).model : initialModel(cfg, tok, [...pools.train, ...pools.eval]);
    const modelCfg = model.config;
    let version = resumeFrom?.meta.version ?? 0;
    const rollout = new LocalRolloutModel(model, tok, version);
    // explorer.workers > 1 (worker threads with copies of the weights) or explorer.engine llama-cpp
    // (a GGUF of each version): weights sent after every update.
    pool = rolloutEngine(cfg, model.config, tok);
    const evalOpts = evalOptions(cfg);
    const evals: RunSummary['evals'] = [];
    const doEval = async (stage: string, step: number): Promise<EvalResult> => {
      const r = await evaluate(rollout, pools.eval, pools.reward, evalOpts);
      evals.push({ stage, step, accuracy: r.accuracy, mean_reward: r.mean_reward });
      metrics.write({ kind: 'eval', stage, step, ...r });
      log.info(`eval after ${stage} step ${step}: accuracy ${r.accuracy.toFixed(3)}`);
      return r;
    };

    const stages = stagesOf(cfg);
    // The stage being run decides the advantage function of fresh experiences.
    let currentAlgorithm = cfg.algorithm;
    // Raw -> verified: validity, reward filters, then the algorithm's group advantages.
    const pipeline = experiencePipeline(cfg, () => currentAlgorithm);
    const feed = new TaskFeed(cfg, pools.train);
    // A resumed run continues the selector where it stopped (order, success statistics).
    if (resumeFrom) feed.restore(await store.getState<SelectorState>(runId, 'selector'));
    const explorer = new Explorer(workflows.get(cfg.workflow.name), pools.reward, feed, {
      append: async (exps) => {
        await store.appendExperiences(exps);
        await store.setState(runId, 'selector', feed.state());
        // The next explore step's number: a resume continues it, so group ids (run:split:step:task) are never reused.
        await store.setState(runId, 'explore_next_step', explorer.step + 1);
      },
    }, {
      ...explorerOptions(cfg, runId, cfg.seed + 1),
      process: processExperiences(pipeline, feed, (counts) => metrics.write({ kind: 'pipeline', step: explorer.step, ...counts })),
    });
    if (resumeFrom) explorer.step = (await store.getState<number>(runId, 'explore_next_step')) ?? 0;
    // Saving the taskset or experts file while the run goes on feeds the next explore steps.
    live = watchRunFiles(cfg, { runId, feed, pools, tok, store });
    await live.ready;

    let baseAcc: number | undefined = typeof resumeFrom?.meta.base_accuracy === 'number' ? resumeFrom.meta.base_accuracy : undefined;
    let totalSteps = resumeFrom?.meta.step ?? 0;
    // A stage_index past the stages is a bad rft.json, not a finished run.
    const startStage = resumeFrom ? checkStageIndex(resumeFrom.meta, stages.length, resumeFrom.dir) : 0;
    const checkpointEvery = opts.checkpointEvery ?? 20;
    let orphanCheckDone = false;
    const checkpoint = async (stageIndex: number, stageStep: number, stageName: string) => {
      const dir = join(runDir, 'checkpoints', `v${version}`);
      await saveCheckpoint(model, dir, { version, step: totalSteps, stage: stageName, stage_index: stageIndex, stage_step: stageStep, base_accuracy: baseAcc }, tok);
      await store.addCheckpoint({ runId, version, path: dir, checksum: '', createdAt: Date.now() });
      await registry.addCheckpoint(runId, { version, path: dir, step: totalSteps });
      await registry.setLastStep(runId, totalSteps);
      return dir;
    };
    // base_accuracy is the accuracy of the model entering the last stage: for one stage the model
    // the run starts from, for warm-up + MIX the warm-up's result. The starting model is always
    // evaluated before the first step, and each stage's result after it.
    const lastStage = stages.length - 1;
    if (!resumeFrom) {
      const start = await doEval('start', 0);
      if (lastStage === 0) baseAcc = start.accuracy;
    }
    for (const [si, stage] of stages.entries()) {
      if (si < startStage) continue;
      // Only a resume from a checkpoint written before base_accuracy was recorded gets here without it.
      if (si === lastStage && baseAcc === undefined) baseAcc = (await doEval('resume', totalSteps)).accuracy;
      const objective = makeObjective(stage.algorithm.name, stage.algorithm.params);
      currentAlgorithm = stage.algorithm;
      // The reference model is the policy as it enters the stage (e.g. the SFT warm-up result), frozen.
      // Under LoRA the reference is the frozen base without adapters (a view: no second copy).
      const reference = objective.needsReference ? (model.lora ? model.base() : model.clone()) : undefined;
      const critic = objective.needsCritic ? new Transformer({ ...modelCfg, valueHead: true }, cfg.seed + 17) : undefined;
      const trainer = new Trainer(model, objective, trainerOptions(cfg, stage, tok.padId), reference, critic);
      const explores = objective.name !== 'sft' && stage.mode !== 'train';
      const samplerCfg = samplerConfig(stage.algorithm.name, stage.algorithm.params, cfg, runId);
      const sampler: Sampler = makeSampler(store, samplerCfg);
      const batchSize = await stageBatchSize(store, samplerCfg, explores, stage.batch_size ?? cfg.trainer.batch_size, cfg.explorer.tasks_per_step * cfg.explorer.repeat_times);
      const stageStart = Date.now();
      const progress = opts.progress ? new Progress(stage.steps ?? Math.round(stage.wall_seconds ?? 0), `${stage.name} (${objective.name})`) : undefined;
      metrics.write({ kind: 'stage', stage: stage.name, algorithm: objective.name });
      // A resumed stage continues at its step; its wall-clock budget counts from the resume.
      let s = si === startStage && typeof resumeFrom?.meta.stage_step === 'number' ? resumeFrom.meta.stage_step : 0;
      let idleTrainer = 0;
      let idleExplorer = 0;
      const done = () => (stage.steps !== undefined && s >= stage.steps) || (stage.wall_seconds !== undefined && (Date.now() - stageStart) / 1000 >= stage.wall_seconds) || opts.signal?.aborted;
      while (!done()) {
        const e0 = performance.now();
        let stepBatch = batchSize;
        // After a kill -9 the steps trained since the last checkpoint have their batches recorded in the
        // buffer: the sampler hands the same batch again, so such a step is replayed, not explored anew
        // (exploring would leave that step's rollouts in the buffer, never trained on).
        const replay = explores && (await store.consumed(samplerCfg.consumer, totalSteps, runId)).length > 0;
        // A kill -9 after a step's rollouts were stored but before its batch was sampled leaves them
        // unused at the current version (in a live loop every such row is trained before the version
        // moves on): the first step after a resume trains on them instead of exploring again.
        const checkOrphans = explores && !replay && resumeFrom !== undefined && !orphanCheckDone;
        const orphans = checkOrphans ? (await store.availability('fifo', { source: 'usual', minVersion: version, runId })).ready : 0;
        if (checkOrphans) orphanCheckDone = true;
        if (orphans > 0) {
          stepBatch = await stageBatchSize(store, samplerCfg, true, batchSize, orphans);
          log.info(`resume: step ${totalSteps} trains on ${orphans} rollouts stored before the stop (not explored again)`);
        } else if (explores && !replay) {
          if (pool && pool.version !== version) await pool.setWeights(model, version);
          const em = await explorer.exploreStep(pool ?? rollout);
          metrics.write({ kind: 'explore', stage: stage.name, step: totalSteps, ...em, tokens_per_s: em.tokens / em.rollout_s, ...(pool ? { rollout: pool.metrics() } : {}) });
          // Synchronous: train on what this step made trainable (invalid and infra-failed samples are
          // stored but never sampled); a step that produced nothing trainable is explored again.
          if (em.trainable === 0) continue;
          stepBatch = await stageBatchSize(store, samplerCfg, true, batchSize, em.trainable);
        }
        const exploreS = (performance.now() - e0) / 1000;
        const batch = await sampler.sample({ batchSize: stepBatch, currentVersion: version, step: totalSteps, timeoutMs: 60_000 });
        const tm = await trainer.trainStep(batch.experiences, version, stageProgress({ steps: stage.steps, wallSeconds: stage.wall_seconds }, s, (Date.now() - stageStart) / 1000));
        version++;
        rollout.version = version;
        // In one process the explorer waits while the trainer trains and vice versa (sync_offset 0).
        idleTrainer += exploreS;
        idleExplorer += tm.time_total_s;
        metrics.write({ kind: 'train', stage: stage.name, ...tm, step: totalSteps, model_version: version });
        const elapsed = (Date.now() - stageStart) / 1000;
        metrics.write({ kind: 'state', stage: stage.name, step: totalSteps, trainer_idle: idleTrainer / elapsed, explorer_idle: explores ? idleExplorer / elapsed : 1 });
        s++;
        totalSteps++;
        progress?.update(stage.steps !== undefined ? s : Math.min(Math.round(elapsed), stage.wall_seconds ?? 0), `loss ${tm.loss.toFixed(3)}`);
        if (cfg.monitor.eval_every > 0 && s % cfg.monitor.eval_every === 0) await doEval(stage.name, totalSteps);
        if (s % checkpointEvery === 0) await checkpoint(si, s, stage.name);
      }
      progress?.done();
      trainer.dispose();
      reference?.dispose();
      critic?.dispose();
      if (opts.signal?.aborted) {
        await checkpoint(si, s, stage.name);
        break;
      }
      if (si < lastStage) {
        const after = await doEval(stage.name, totalSteps);
        if (si + 1 === lastStage) baseAcc = after.accuracy;
      }
      // The stage is done: a resume starts at the next one.
      await checkpoint(si + 1, 0, stage.name);
    }
    const final = await doEval('final', totalSteps);
    const summary: RunSummary = {
      run_id: runId,
      run_dir: runDir,
      // Undefined only when a stop came before the last stage began: then the newest eval is the base.
      base_accuracy: baseAcc ?? evals.at(-2)?.accuracy ?? final.accuracy,
      final_accuracy: final.accuracy,
      evals,
      trainer_steps: totalSteps,
      explore_steps: explorer.step,
      wall_seconds: (Date.now() - t0) / 1000,
      // monitor.report: false writes no HTML report (the summary's report is then '').
      report: cfg.monitor.report ? join(runDir, 'report.html') : '',
      checkpoint: join(runDir, 'checkpoints', `v${version}`),
    };
    if (summary.report) writeReport(summary.report, `RFT Studio run ${runId}`, metrics.read(), {
      base_accuracy: summary.base_accuracy,
      final_accuracy: summary.final_accuracy,
      trainer_steps: totalSteps,
      wall_seconds: summary.wall_seconds,
      stages: stages.map((s) => `${s.name}:${s.algorithm.name}`).join(' -> '),
    });
    model.dispose();
    return summary;
  } finally {
    await live?.close();
    await pool?.close();
    await store.close();
  }
}
