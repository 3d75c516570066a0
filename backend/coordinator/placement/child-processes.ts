// Placement `checkpoint` (the default placement of DESIGN.md) of the one run loop (run-loop.ts):
// per stage the coordinator starts a trainer process and, for stages that explore, an explorer
// process; they share the run's SQLite buffer (WAL) and move weights as versioned checkpoints
// recorded in it. Between stages and at the end the coordinator evaluates the newest checkpoint.
import { InputError } from '../../core/errors.js';
import { join } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import { logger } from '../../core/log.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { inferenceOutsideHeap } from '../../model/external-weights.js';
import { checkStageIndex, readCheckpointMeta } from '../../model/checkpoint-meta.js';
import { loadTokenizer, saveTokenizer } from '../../model/tokenizer/index.js';
import { openStore, type ExperienceStore } from '../../buffer/storage/index.js';
import { importTrainFrom } from '../train-from.js';
import type { RunRegistry } from '../../buffer/runs.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { makeObjective } from '../../trainer/resolve-algorithm.js';
import { evaluate } from '../evaluate.js';
import { runStages, type Placement } from '../run-loop.js';
import { stageExplores } from '../setup/stage-data.js';
import { RunState } from '../run-state.js';
import { Worker, superviseStage } from '../processes.js';
import { checkSyncConfig } from '../sync-plan.js';
import { stagesOf, processArgv, type ProcessArgs } from '../process-context.js';
import { trustEnv } from '../workspace-code.js';
import type { RunSummary } from '../run-types.js';
import { runContext, type PlacementContext } from './entry.js';
import { loadTasks, type TaskPools } from '../setup/tasks.js';
import { publishCheckpoint, seedRun } from '../setup/run-data.js';
import { initialModel, makeTokenizer, tokenizerTexts } from '../setup/model.js';
import { evalOptions } from '../setup/explorer.js';

const log = logger('coordinator');

export async function executeProcesses(c: PlacementContext): Promise<RunSummary> {
  const { cfg, runId, runDir, metrics, registry } = c;
  const bad = checkSyncConfig(cfg);
  if (bad) throw new InputError(bad);
  const pools = await loadTasks(cfg);
  const storeUrl = cfg.buffer.storage === 'sqlite' ? c.dbPath : cfg.buffer.storage;
  const store = await openStore(storeUrl);
  try {
    if (!(await store.latestCheckpoint(runId))) await initRun(cfg, runId, runDir, store, registry, pools);
    // buffer.train_from: copied into the run's buffer here, before any trainer process reads it.
    if (cfg.buffer.train_from) await importTrainFrom(store, runId, cfg.buffer.train_from);
    const stages = stagesOf(cfg);
    const evalOpts = evalOptions(cfg);
    // Placement `checkpoint`: the coordinator (this process) evaluates the newest checkpoint; each
    // stage's trainer and explorer run as child processes (trainer-process.ts, explorer-process.ts)
    // that share the run's buffer and move weights as versioned checkpoints recorded in it.
    const state = new RunState(store, runId);
    const placement: Placement = {
      nextStage: async () => {
        const ck = (await store.latestCheckpoint(runId))!;
        // A stage_index past the stages is a bad rft.json, not a finished run.
        return checkStageIndex(readCheckpointMeta(ck.path), stages.length, ck.path);
      },
      evaluate: async () => {
        const ck = (await store.latestCheckpoint(runId))!;
        const { model, meta } = loadCheckpoint(ck.path, { external: inferenceOutsideHeap() }); // evaluation only: nothing trains
        try {
          return {
            result: await evaluate(
              new LocalRolloutModel(model, loadTokenizer(runDir), meta.version),
              pools.eval,
              pools.reward,
              evalOpts,
            ),
            step: ck.version,
          };
        } finally {
          model.dispose();
        }
      },
      finalWhenStopped: true,
      runStage: async (si, stage) => {
        const ck = (await store.latestCheckpoint(runId))!;
        await state.markStageStart(si, { version: ck.version, path: ck.path });
        const explores = stageExplores(stage);
        metrics.write({
          kind: 'stage',
          stage: stage.name,
          algorithm: makeObjective(stage.algorithm.name, stage.algorithm.params).name,
          processes: explores ? 2 : 1,
        });
        return runStage(c, { runDir, runId, store: storeUrl, stage: si }, explores);
      },
      finish: async () => {
        const last = (await store.latestCheckpoint(runId))!;
        await registry.addCheckpoint(runId, { version: last.version, path: last.path, step: last.version });
        await registry.setLastStep(runId, last.version);
        return {
          trainerSteps: last.version,
          exploreSteps: (await store.getState<number>(runId, 'explorer_target')) ?? 0,
          checkpoint: last.path,
        };
      },
    };
    const { summary, stopped } = await runStages(
      cfg,
      placement,
      runContext(c, pools, state, {
        reportExtra: {
          synchronizer: `checkpoint, ${cfg.synchronizer.schedule === 'async' ? 'mode async' : `${cfg.synchronizer.schedule ? `mode ${cfg.synchronizer.schedule}, ` : ''}sync_offset ${cfg.synchronizer.sync_offset}`}, sync_interval ${cfg.synchronizer.sync_interval}`,
        },
      }),
    );
    if (stopped) log.info('run stopped; `rft resume` continues it');
    return summary;
  } finally {
    await store.close();
  }
}

/** Tokenizer, tasks, expert experiences and the initial weights as checkpoint v0. */
async function initRun(
  cfg: RunConfig,
  runId: string,
  runDir: string,
  store: ExperienceStore,
  registry: RunRegistry,
  pools: TaskPools,
): Promise<void> {
  const tok = makeTokenizer(cfg, tokenizerTexts(pools));
  saveTokenizer(tok, runDir);
  await seedRun(store, runId, pools, tok);
  const model = initialModel(cfg, tok, [...pools.train, ...pools.eval]);
  const dir = join(runDir, 'checkpoints', 'v0');
  const meta = { version: 0, step: 0, stage: 'init', stage_index: 0, stage_step: 0 };
  await publishCheckpoint({ store, runId, model, tok, dir, meta });
  model.dispose();
  await registry.addCheckpoint(runId, { version: 0, path: dir, step: 0 });
}

/** One stage: returns true when the run was stopped (signal) rather than the stage finished. */
async function runStage(c: PlacementContext, a: ProcessArgs, explores: boolean): Promise<boolean> {
  const logDir = join(c.runDir, 'logs');
  const event =
    (name: string) =>
    (e: { kind: string; pid?: number; code?: number | null; signal?: string | null; lastLines?: string[] }) =>
      c.metrics.write({
        kind: 'process',
        component: name,
        event: e.kind,
        pid: e.pid,
        code: e.code,
        signal: e.signal,
        last_lines: e.lastLines?.slice(-10),
      });
  const trainer = new Worker(
    {
      name: 'trainer',
      args: processArgv('trainer-process', a),
      env: trustEnv(c.cfg),
      restarts: c.cfg.restart,
      onEvent: event('trainer'),
    },
    logDir,
  );
  const explorer = explores
    ? new Worker(
        {
          name: 'explorer',
          args: processArgv('explorer-process', a),
          env: trustEnv(c.cfg),
          restarts: c.cfg.restart,
          onEvent: event('explorer'),
        },
        logDir,
      )
    : undefined;
  const all = [trainer, ...(explorer ? [explorer] : [])];
  const onAbort = () => void Promise.all(all.map((w) => w.stop()));
  c.opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await superviseStage(trainer, explorer ? [explorer] : []);
  } catch (e) {
    // One process died for good: stop the other cleanly (it finishes its step), then fail the run.
    await Promise.all(all.map((w) => w.stop()));
    throw e;
  } finally {
    c.opts.signal?.removeEventListener('abort', onAbort);
  }
  await explorer?.stop();
  return !!c.opts.signal?.aborted;
}
