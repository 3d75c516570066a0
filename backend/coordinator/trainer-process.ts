// `rft trainer-process RUN_DIR`: the trainer of a run as its own process. Starts from the newest
// checkpoint in the buffer (its step is the resume point), trains the stage with the run loop's
// step loop (run-loop.ts trainStage), publishes checkpoints.
import { RunState } from './run-state.js';
import { readRunFolderConfig } from './load-config.js';
import { InfrastructureError } from '../core/errors.js';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { logger } from '../core/log.js';
import { engineRecord, initEngine } from '../model/engine.js';
import { runModelParams } from '../model/run-model.js';
import { loadCheckpoint } from '../model/checkpoint.js';
import { publishCheckpoint, stageCheckpointMeta } from './setup/run-data.js';
import { frozenOutsideHeap } from '../model/external-weights.js';
import { RunRegistry } from '../buffer/runs.js';
import { makeSampler } from '../buffer/sampler/index.js';
import { acquireComponentLock, exitWithParent, openProcessContext, type ProcessArgs } from './process-context.js';
import { openStage, trainStage } from './run-loop.js';
import { servedStageConfig } from '../core/config-serve.js';

const log = logger('trainer-process');

/** Published checkpoints kept on disk besides stage starts (the explorer only ever loads the newest). */
const KEEP = 3;

export async function trainerProcess(a: ProcessArgs, signal: AbortSignal): Promise<number> {
  // auto: the model's size decides webgpu, as in the run's own process (run.ts)
  await initEngine({ modelParams: runModelParams(readRunFolderConfig(a.runDir)) });
  const ctx = await openProcessContext(a, 'trainer');
  const { cfg, db, tok, runId, metrics } = ctx;
  metrics.write(engineRecord('trainer'));
  const stage = ctx.stages[a.stage]!;
  exitWithParent(() => process.exit(3));
  const unlock = await acquireComponentLock(ctx.runDir, 'trainer');
  try {
    const latest = await db.latestCheckpoint(runId);
    if (!latest) throw new InfrastructureError(`run ${runId}: no checkpoint in ${db.location} to start from`);
    const external = frozenOutsideHeap(cfg.model.lora); // LoRA: the frozen base outside the wasm heap
    const { model, meta } = loadCheckpoint(latest.path, { external });
    const metaStage = typeof meta.stage_index === 'number' ? meta.stage_index : 0;
    if (metaStage > a.stage) {
      log.info(`stage ${stage.name} already done (checkpoint v${meta.version})`);
      model.dispose();
      return 0;
    }
    const stageStep = metaStage === a.stage && typeof meta.stage_step === 'number' ? meta.stage_step : 0;
    const step = typeof meta.step === 'number' ? meta.step : meta.version;
    // The reference is the policy as it entered the stage: the stage-start checkpoint, never pruned.
    const state = new RunState(db, runId);
    const start = await state.stageStart(a.stage);
    const parts = await openStage(
      servedStageConfig(cfg),
      stage,
      model,
      tok,
      db,
      runId,
      () => (start?.path ? loadCheckpoint(start.path, { external }).model : model.clone()),
      latest.path,
    );
    const registry = await RunRegistry.open(ctx.workspace);
    const stageStarts = new Set<number>();
    for (let i = 0; i <= a.stage; i++) {
      const s = await state.stageStart(i);
      if (s) stageStarts.add(s.version);
    }
    log.info(
      `stage ${stage.name} (${parts.objective.name}) from v${meta.version}, stage step ${stageStep}, batch ${parts.batchSize}`,
    );
    // Placement `checkpoint`, trainer side: experiences come from the explorer process through the
    // run's buffer; weights go out as checkpoints recorded in it.
    const r = await trainStage(
      { cfg, stage, model, tok, evalTasks: ctx.pools.eval, reward: ctx.pools.reward, metrics, step, stageStep },
      parts,
      {
        sampler: makeSampler(db, parts.samplerConfig),
        syncInterval: cfg.synchronizer.sync_interval,
        signal,
        // Mode serve: the batch comes when the callers reward episodes, however long that takes.
        ...(cfg.mode === 'serve' ? { sampleTimeoutMs: Number.POSITIVE_INFINITY } : {}),
        onState: (s, d) => ctx.setState('trainer', s, d),
        publishWeights: async (version, sStep, done) => {
          const dir = join(ctx.runDir, 'checkpoints', `v${version}`);
          const meta = stageCheckpointMeta(version, stage.name, a.stage, sStep, done);
          await publishCheckpoint({ store: db, runId, model, tok, dir, meta, critic: parts.trainer });
          // Every published checkpoint goes into the registry as it is written (the dashboard, the
          // Runs view and Evaluate list it while the run goes on), and the pruned ones leave it.
          // The registry drops them before their folders go, so it never names a missing one.
          const ckDir = join(ctx.runDir, 'checkpoints');
          const pruned = prunable(ckDir, version, stageStarts);
          await registry.addCheckpoint(runId, { version, path: dir, step: version }, pruned);
          for (const v of pruned) rmSync(join(ckDir, `v${v}`), { recursive: true, force: true });
        },
      },
    );
    log.info(
      `stage ${stage.name}: ${r.stageDone ? 'done' : 'stopped'} at step ${r.step}, idle ${(r.idle * 100).toFixed(1)}%`,
    );
    parts.dispose();
    model.dispose();
    return 0;
  } finally {
    unlock();
    await db.close();
  }
}

/** Published checkpoints to delete: older than the newest KEEP (stage starts and every 20th stay as resume / report points). */
function prunable(dir: string, newest: number, keep: Set<number>): number[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const m = /^v(\d+)$/.exec(name);
    if (!m) return [];
    const v = Number(m[1]);
    return v > newest - KEEP || keep.has(v) || v % 20 === 0 ? [] : [v];
  });
}
