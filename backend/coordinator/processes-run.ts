// RFT-core with synchronizer `checkpoint` (the default process model of DESIGN.md): per stage the
// coordinator starts a trainer process and, for stages that explore, an explorer process; they share
// the run's SQLite buffer (WAL) and move weights as versioned checkpoints recorded in it. Between
// stages and at the end the coordinator evaluates the newest checkpoint on the held-out split.
import { join } from 'node:path';
import type { RunConfig } from '../core/config.js';
import { logger } from '../core/log.js';
import { loadCheckpoint, saveCheckpoint } from '../model/checkpoint.js';
import { checkStageIndex } from '../model/checkpoint-meta.js';
import { loadTokenizer, saveTokenizer } from '../model/tokenizer/index.js';
import { openStore, type ExperienceStore } from '../buffer/storage/index.js';
import type { RunRegistry } from '../buffer/runs.js';
import { LocalRolloutModel } from '../explorer/local-model.js';
import { workflows } from '../explorer/workflow.js';
import '../explorer/workflows/index.js';
import { makeObjective } from '../trainer/objectives.js';
import { evaluate } from './evaluate.js';
import { writeReport, type MetricsLog } from './monitor.js';
import { Worker, superviseStage } from './processes.js';
import { checkSyncConfig } from './sync-plan.js';
import { stagesOf, workerArgv, type WorkerArgs } from './worker-context.js';
import { trustEnv } from './workspace-code.js';
import type { RunOptions, RunSummary } from './run-types.js';
import { evalOptions, expertExperience, initialModel, loadTasks, makeTokenizer, tokenizerTexts, type TaskPools } from './setup.js';

const log = logger('coordinator');

export interface ProcessRunContext {
  opts: RunOptions;
  cfg: RunConfig;
  runId: string;
  runDir: string;
  dbPath: string;
  registry: RunRegistry;
  metrics: MetricsLog;
  t0: number;
  resumed: boolean;
}

export async function executeProcesses(c: ProcessRunContext): Promise<RunSummary> {
  const { cfg, runId, runDir, metrics, registry } = c;
  const bad = checkSyncConfig(cfg);
  if (bad) throw new Error(bad);
  const pools = loadTasks(cfg);
  const storeUrl = cfg.buffer.storage === 'sqlite' ? c.dbPath : cfg.buffer.storage;
  const store = await openStore(storeUrl);
  const evals: RunSummary['evals'] = [];
  try {
    if (!(await store.latestCheckpoint(runId))) await initRun(cfg, runId, runDir, store, registry, pools);
    const stages = stagesOf(cfg);
    const evalOpts = evalOptions(cfg);
    const evalLatest = async (stage: string) => {
      const ck = (await store.latestCheckpoint(runId))!;
      const { model, meta } = loadCheckpoint(ck.path);
      try {
        const r = await evaluate(new LocalRolloutModel(model, loadTokenizer(runDir), meta.version), pools.eval, pools.reward, evalOpts);
        evals.push({ stage, step: ck.version, accuracy: r.accuracy, mean_reward: r.mean_reward });
        metrics.write({ kind: 'eval', stage, step: ck.version, ...r });
        log.info(`eval after ${stage} (v${ck.version}): accuracy ${r.accuracy.toFixed(3)}`);
        return r;
      } finally {
        model.dispose();
      }
    };
    // base_accuracy is the accuracy of the model entering the last stage (see run.ts); the starting
    // model is evaluated before the first step and each stage's result after it.
    const lastStage = stages.length - 1;
    if ((await store.getState<number>(runId, 'eval_start')) === null) {
      const start = await evalLatest('start');
      await store.setState(runId, 'eval_start', start.accuracy);
      if (lastStage === 0) await store.setState(runId, 'base_accuracy', start.accuracy);
    }
    let stopped = false;
    for (;;) {
      const ck = (await store.latestCheckpoint(runId))!;
      const meta = loadCheckpoint(ck.path).meta; // small model: reading it whole is cheap
      // A stage_index past the stages is a bad rft.json, not a finished run.
      const si = checkStageIndex(meta, stages.length, ck.path);
      if (si >= stages.length || c.opts.signal?.aborted) break;
      const stage = stages[si]!;
      // A run killed between the end of the previous stage and its eval resumes here without a base.
      if (si === lastStage && (await store.getState<number>(runId, 'base_accuracy')) === null) {
        await store.setState(runId, 'base_accuracy', (await evalLatest(si === 0 ? 'start' : stages[si - 1]!.name)).accuracy);
      }
      if (!(await store.getState(runId, `stage_start:${si}`))) await store.setState(runId, `stage_start:${si}`, { version: ck.version, path: ck.path });
      const objective = makeObjective(stage.algorithm.name, stage.algorithm.params);
      const explores = objective.name !== 'sft' && stage.mode !== 'train';
      metrics.write({ kind: 'stage', stage: stage.name, algorithm: objective.name, processes: explores ? 2 : 1 });
      stopped = await runStage(c, { runDir, runId, store: storeUrl, stage: si }, explores);
      if (stopped) break;
      if (si < lastStage) {
        const after = await evalLatest(stage.name);
        if (si + 1 === lastStage) await store.setState(runId, 'base_accuracy', after.accuracy);
      }
    }
    const final = await evalLatest('final');
    // Periodic evals (monitor.eval_every) ran in the trainer process: listed in step order as one process lists them.
    const periodic = metrics
      .read()
      .filter((r) => r.kind === 'eval' && r.component === 'trainer' && r.t >= c.t0)
      .map((r) => ({ stage: String(r.stage), step: Number(r.step), accuracy: Number(r.accuracy), mean_reward: Number(r.mean_reward) }));
    const allEvals = [...periodic.map((e) => ({ e, p: 0 })), ...evals.map((e) => ({ e, p: 1 }))].sort((a, b) => a.e.step - b.e.step || a.p - b.p).map((x) => x.e);
    const last = (await store.latestCheckpoint(runId))!;
    // Missing only when a stop came before the last stage began: then the newest eval before 'final' is the base.
    const baseAcc = (await store.getState<number>(runId, 'base_accuracy')) ?? evals.at(-2)?.accuracy ?? final.accuracy;
    const summary: RunSummary = {
      run_id: runId,
      run_dir: runDir,
      base_accuracy: baseAcc,
      final_accuracy: final.accuracy,
      evals: allEvals,
      trainer_steps: last.version,
      explore_steps: (await store.getState<number>(runId, 'explorer_target')) ?? 0,
      wall_seconds: (Date.now() - c.t0) / 1000,
      // monitor.report: false writes no HTML report (the summary's report is then '').
      report: cfg.monitor.report ? join(runDir, 'report.html') : '',
      checkpoint: last.path,
    };
    await registry.addCheckpoint(runId, { version: last.version, path: last.path, step: last.version });
    await registry.setLastStep(runId, last.version);
    if (summary.report) writeReport(summary.report, `RFT Studio run ${runId}`, metrics.read(), {
      base_accuracy: summary.base_accuracy,
      final_accuracy: summary.final_accuracy,
      trainer_steps: summary.trainer_steps,
      wall_seconds: summary.wall_seconds,
      stages: stages.map((s) => `${s.name}:${s.algorithm.name}`).join(' -> '),
      synchronizer: `checkpoint, sync_interval ${cfg.synchronizer.sync_interval}, sync_offset ${cfg.synchronizer.sync_offset}`,
    });
    if (stopped) log.info('run stopped; `rft resume` continues it');
    return summary;
  } finally {
    await store.close();
  }
}

/** Tokenizer, tasks, expert experiences and the initial weights as checkpoint v0. */
async function initRun(cfg: RunConfig, runId: string, runDir: string, store: ExperienceStore, registry: RunRegistry, pools: TaskPools): Promise<void> {
  const tok = makeTokenizer(cfg, tokenizerTexts(pools));
  saveTokenizer(tok, runDir);
  // A run killed before v0 existed starts over here: tasks upsert; experts are added once.
  await store.putTasks(runId, pools.train);
  if (pools.experts.length && (await store.count({ runId, source: 'expert' })) === 0)
    await store.appendExperiences(pools.experts.map((t) => expertExperience(tok, runId, t, pools.solve(t))));
  const model = initialModel(cfg, tok, [...pools.train, ...pools.eval]);
  const dir = join(runDir, 'checkpoints', 'v0');
  await saveCheckpoint(model, dir, { version: 0, step: 0, stage: 'init', stage_index: 0, stage_step: 0 }, tok);
  model.dispose();
  await store.addCheckpoint({ runId, version: 0, path: dir, checksum: '', createdAt: Date.now() });
  await registry.addCheckpoint(runId, { version: 0, path: dir, step: 0 });
}

/** One stage: returns true when the run was stopped (signal) rather than the stage finished. */
async function runStage(c: ProcessRunContext, a: WorkerArgs, explores: boolean): Promise<boolean> {
  const logDir = join(c.runDir, 'logs');
  const event = (name: string) => (e: { kind: string; pid?: number; code?: number | null; signal?: string | null; lastLines?: string[] }) =>
    c.metrics.write({ kind: 'process', component: name, event: e.kind, pid: e.pid, code: e.code, signal: e.signal, last_lines: e.lastLines?.slice(-10) });
  const trainer = new Worker({ name: 'trainer', args: workerArgv('trainer-worker', a), env: trustEnv(c.cfg), restarts: c.cfg.restart, onEvent: event('trainer') }, logDir);
  const explorer = explores ? new Worker({ name: 'explorer', args: workerArgv('explorer-worker', a), env: trustEnv(c.cfg), restarts: c.cfg.restart, onEvent: event('explorer') }, logDir) : undefined;
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
