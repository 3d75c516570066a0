// `rft explorer-process RUN_DIR`: the explorer of a run as its own process. Loads the newest
// published checkpoint, explores, appends experiences tagged with that version, and waits whenever
// it would get more than sync_offset versions ahead of the trainer (async: more than
// buffer.max_staleness steps ahead of the newest published version).
import { RunState } from './run-state.js';
import { readRunFolderConfig } from './load-config.js';
import { logger } from '../core/log.js';
import { engineRecord, initEngine } from '../model/engine.js';
import { runModelParams } from '../model/run-model.js';
import { loadCheckpoint } from '../model/checkpoint.js';
import { inferenceOutsideHeap, outsideHeapNote } from '../model/external-weights.js';
import { LocalRolloutModel } from '../explorer/local-model.js';
import type { SyncedRolloutModel } from '../explorer/rollout-engine.js';
import { runExplorerLoop } from '../explorer/explorer-loop.js';
import { acquireComponentLock, exitWithParent, openProcessContext, type ProcessArgs } from './process-context.js';
import { rolloutEngine } from './setup/explorer.js';
import { samplerConfig } from './setup/trainer.js';
import { exploreNeed } from './stage-batch.js';
import { requiredVersion, syncOffset } from './sync-plan.js';
import { trainerStarved } from './trainer-starved.js';
import { openExplorerHalf, type ExplorerHalf } from './explorer-half.js';
import { serveProcess } from './placement/serve-process.js';

const log = logger('explorer-process');

export async function explorerProcess(
  a: ProcessArgs,
  signal: AbortSignal,
  opts: { maxSteps?: number } = {},
): Promise<number> {
  // auto: the model's size decides webgpu, as in the run's own process (run.ts)
  await initEngine({ modelParams: runModelParams(readRunFolderConfig(a.runDir)) });
  const ctx = await openProcessContext(a, 'explorer');
  const { cfg, db, tok, runId, metrics, pools } = ctx;
  metrics.write(engineRecord('explorer'));
  const stage = ctx.stages[a.stage]!;
  exitWithParent(() => process.exit(3));
  const unlock = await acquireComponentLock(ctx.runDir, 'explorer');
  let pool: SyncedRolloutModel | undefined;
  let half: ExplorerHalf | undefined;
  try {
    // Mode serve: the callers are the tasks; this process answers them with the newest checkpoint.
    if (cfg.mode === 'serve') return await serveProcess(ctx, signal);
    const start = await new RunState(db, runId).stageStart(a.stage);
    if (!start)
      throw new Error(
        `run ${runId}: stage ${a.stage} has no start checkpoint recorded (the coordinator records it before starting workers)`,
      );
    const saved = await db.getState<number>(runId, 'explorer_target');
    // Explore steps are numbered by the trainer step they feed; a restart continues after the last appended one.
    const target = Math.max(saved ?? 0, start.version);
    const plan = {
      interval: cfg.synchronizer.sync_interval,
      offset: syncOffset(cfg),
      stageStartVersion: start.version,
    };
    // The selector continues where the last explorer of the run left it (stage change, restart), with
    // the tasks synthesized by earlier explorers of the run.
    half = await openExplorerHalf({
      cfg,
      runId,
      store: db,
      pools,
      tok,
      metrics,
      algorithm: () => stage.algorithm,
      seed: cfg.seed + 1 + target,
      restore: true,
      tag: { stage: stage.name },
      watch: true,
    });
    const { explorer } = half;
    // The trainer waits for a full batch of this step's rollouts (the usual share of the stage's batch):
    // refill steps the pipeline thinned out, and steps short of a configured batch_size.
    const sc = samplerConfig(stage.algorithm.name, stage.algorithm.params, cfg);
    explorer.need = exploreNeed(cfg, stage, sc.type === 'mixed' ? (sc.expertRatio ?? 0) : 0);
    explorer.signal = signal;
    log.info(
      `stage ${stage.name}: exploring from step ${target} (synchronizer ${cfg.synchronizer.schedule ?? 'sync_offset ' + plan.offset}, sync_interval ${plan.interval})`,
    );
    const r = await runExplorerLoop({
      explorer,
      target,
      requiredVersion: (t) => requiredVersion(t, plan),
      // Async: rows made further ahead would be stale before the trainer reached them.
      ...(cfg.synchronizer.schedule === 'async'
        ? {
            lead: cfg.buffer.max_staleness,
            // The trainer waits for a batch and the buffer holds no usual row it could take: past the bound, or nothing moves.
            trainerStarved: (published: number) => trainerStarved(db, runId, published),
          }
        : {}),
      latest: async () => {
        const c = await db.latestCheckpoint(runId);
        return c && { version: c.version, path: c.path };
      },
      load: async (w) => {
        // This process only samples: the weights load outside the wasm heap when the addon allows
        // (a 1B model's do not fit it), and the native decode step reads them there.
        const { model, meta } = loadCheckpoint(w.path, { external: inferenceOutsideHeap() });
        model.mergeAdapters(); // LoRA: this process only samples, from plain (merged) weights (merged in place outside the heap)
        const note = outsideHeapNote(model);
        if (note) log.info(`v${meta.version}: ${note}`);
        pool ??= rolloutEngine(cfg, model.config, tok, { disposeReplaced: true });
        if (!pool) return new LocalRolloutModel(model, tok, meta.version);
        // Rollout workers keep their own copies of the weights: publish, then free ours (llama-cpp keeps it to recompute log-probs).
        await pool.setWeights(model, meta.version);
        if (!pool.holdsModel) model.dispose();
        return pool;
      },
      release: (m) => {
        if (m instanceof LocalRolloutModel) m.model.dispose();
      },
      onStep: (next) => db.setState(runId, 'explorer_target', next),
      onMetrics: (rec) => metrics.write({ stage: stage.name, ...rec, ...(pool ? { rollout: pool.metrics() } : {}) }),
      onState: (s, d) => ctx.setState('explorer', s, d),
      maxSteps: opts.maxSteps,
      signal,
    });
    log.info(
      `stage ${stage.name}: explorer stopped before step ${r.target}, idle ${(r.idle * 100).toFixed(1)}%${cfg.synchronizer.schedule === 'async' ? `, waiting for the trainer (bound) ${(r.backpressure * 100).toFixed(1)}%` : ''}`,
    );
    return 0;
  } finally {
    await half?.close();
    await pool?.close();
    unlock();
    await db.close();
  }
}
