// The one run loop. What a run computes is written here once: the stage iteration (each stage's
// objective, reference, critic, trainer, sampler and batch size, opened by stage-open.ts; the held-out
// evaluations at the start, every monitor.eval_every steps, after each stage and at the end;
// base_accuracy; the summary and report) and each stage's step loop (explore -> experience pipeline -> buffer -> sample ->
// train -> version++ -> publish weights, runTrainerLoop). A placement (placement/in-process.ts: one
// process; placement/child-processes.ts with trainer-process.ts and explorer-process.ts: child processes;
// placement/distributed.ts with distributed/explorer.ts: PostgreSQL) is a Placement plus a
// StageTransport: it decides only where each part runs and how experiences and weights travel.
import type { RunConfig } from '../core/config.js';
import type { Task } from '../core/types.js';
import { logger } from '../core/log.js';
import type { Transformer } from '../model/transformer.js';
import type { Tokenizer } from '../model/tokenizer/index.js';
import type { Sampler } from '../buffer/sampler/index.js';
import { LocalRolloutModel } from '../explorer/local-model.js';
import type { RewardFn } from '../explorer/workflow.js';
import { runTrainerLoop, type TrainerLoopResult } from '../trainer/step-loop.js';
import type { ComponentActivity } from '../core/component-state.js';
import { describeAccuracy, evaluate, type EvalResult } from './evaluate.js';
import { runSeconds, runWarnings, writeReport, type MetricsLog } from './monitor.js';
import { stageGuards } from './stage-guards.js';
import type { RunSummary } from './run-types.js';
import { describeRunModel } from '../model/run-model.js';
import { evalOptions } from './setup/explorer.js';
import { stagesOf, type Stage } from './setup/trainer.js';
import type { StageParts } from './stage-open.js';
import type { RunState } from './run-state.js';

const log = logger('coordinator');

// Opening a stage (objective, reference, critic, trainer, sampler settings, batch size): stage-open.ts.
export { checkStageFits, openStage, type StageParts } from './stage-open.js';

/** The first trainer step of each stage (steps before it), for placements that number steps across stages. */
export function stageStarts(stages: Stage[]): number[] {
  const out: number[] = [];
  let at = 0;
  for (const s of stages) {
    out.push(at);
    at += s.steps ?? 0;
  }
  return out;
}

/** The stage a trainer step belongs to (stages bounded by steps). */
export function stageOfStep(stages: Stage[], step: number): number {
  const starts = stageStarts(stages);
  let i = 0;
  while (i + 1 < stages.length && step >= starts[i + 1]!) i++;
  return i;
}

/** How a stage's experiences reach its trainer and its weights leave it (the placement's part of the step loop). */
export interface StageTransport {
  sampler: Sampler;
  /** One process: explore the step here (see runTrainerLoop's `explore`). Elsewhere another process feeds the buffer. */
  explore?(step: number, stageStep: number): Promise<number | null>;
  /** Weights of `version` out to the explorers (and a resume point); `stageDone` marks the stage's end. */
  publishWeights(version: number, stageStep: number, stageDone: boolean): Promise<void>;
  /** Steps between publications (synchronizer.sync_interval; 1 in one process). */
  syncInterval: number;
  /** Where step records go (default: the run's metrics.jsonl). */
  onMetrics?(rec: Record<string, unknown>): void;
  onState?(state: ComponentActivity, detail?: string): void;
  stateExtra?(): Record<string, unknown>;
  sampleTimeoutMs?: number;
  signal?: AbortSignal;
}

export interface StageRun {
  cfg: RunConfig;
  stage: Stage;
  model: Transformer;
  tok: Tokenizer;
  evalTasks: Task[];
  reward: RewardFn;
  metrics: MetricsLog;
  /** Trainer steps done before (= the weights' version) and steps of this stage done. */
  step: number;
  stageStep: number;
}

/** One stage's step loop: sample -> train -> version++ -> publish, with monitor.eval_every evaluations. */
export function trainStage(r: StageRun, parts: StageParts, t: StageTransport): Promise<TrainerLoopResult> {
  const { cfg, stage, metrics } = r;
  const every = cfg.monitor.eval_every;
  const sink = t.onMetrics ?? ((x: Record<string, unknown>) => metrics.write(x));
  const guard = stageGuards(cfg, stage, metrics, sink);
  return runTrainerLoop({
    trainer: parts.trainer,
    sampler: t.sampler,
    batchSize: parts.batchSize,
    step: r.step,
    stageStep: r.stageStep,
    steps: stage.steps,
    wallSeconds: stage.wall_seconds,
    syncInterval: t.syncInterval,
    signal: t.signal,
    sampleTimeoutMs: t.sampleTimeoutMs,
    // A stage training on buffer.train_from's rows alone: nothing adds rows, so running out ends it.
    finiteBuffer: !parts.explores && cfg.buffer.train_from !== undefined,
    explore: t.explore,
    stateExtra: t.stateExtra,
    // Partial rollouts: with loss_segments fresh, segments older than the staleness bound leave the loss.
    ...(cfg.explorer.partial_rollout?.loss_segments === 'fresh' ? { freshSegments: cfg.buffer.max_staleness } : {}),
    // monitor.eval_every: the held-out eval of the weights every N steps of the stage, wherever the trainer runs (none without an eval set).
    afterStep:
      every > 0 && r.evalTasks.length > 0
        ? async (v, sStep) => {
            if (sStep % every !== 0) return;
            const e = await evaluate(new LocalRolloutModel(r.model, r.tok, v), r.evalTasks, r.reward, evalOptions(cfg));
            metrics.write({ kind: 'eval', component: 'trainer', stage: stage.name, step: v, ...e });
            noteEval(metrics, e, `after ${stage.name} step ${v}`, stage.name, v);
          }
        : undefined,
    onMetrics: (rec) => {
      sink({ stage: stage.name, ...rec });
      // A collapsing or stalled run is said once per stage, in the log and as a `warning` record (summary, report, dashboard).
      guard({ stage: stage.name, ...rec });
    },
    onState: t.onState,
    publish: (v, sStep, done) => t.publishWeights(v, sStep, done),
  });
}

/**
 * Logs an evaluation; one that scored no answer is a `warning` record too (summary, report,
 * dashboard), never an accuracy of 0.
 */
function noteEval(metrics: Pick<MetricsLog, 'write'>, r: EvalResult, what: string, stage: string, step: number): void {
  if (r.accuracy !== null) return log.info(`eval ${what}: ${describeAccuracy(r)}`);
  const message = `eval ${what}: ${r.no_result}`;
  log.warn(message);
  metrics.write({
    kind: 'warning',
    code: 'eval_no_result',
    stage,
    step,
    message,
    values: { infra_failures: r.infra_failures },
  });
}

/** The placement's side of the stage iteration: where the run stands, where stages and evaluations run. */
export interface Placement {
  /**
   * false: modes explore and bench, whose weights never change: one evaluation after the stages,
   * labelled with the mode, is both the base and the final accuracy (default true).
   */
  trains?: boolean;
  /** Why the run stopped without a stop signal (an explore step that made no trainable rollout), once it did. */
  stopReason?(): string | undefined;
  /** The stage to run next (stages.length: all done), from the newest resume point. */
  nextStage(): Promise<number>;
  /** Held-out evaluation of the newest weights; `step` is their version. */
  evaluate(label: string): Promise<{ result: EvalResult; step: number }>;
  /** Run stage `si` from its resume point; true when the run was stopped rather than the stage finished. */
  runStage(si: number, stage: Stage): Promise<boolean>;
  /** After the last stage, before the final evaluation (distributed: explorers stop). */
  beforeFinal?(completed: boolean): Promise<void>;
  /** A stopped run still gets its final evaluation (local runs); distributed evaluates only a finished run. */
  finalWhenStopped: boolean;
  finish(): Promise<{ trainerSteps: number; exploreSteps: number; checkpoint: string }>;
}

/** One run as runStages sees it: its id and folder, metrics log, report and eval set (not the registry record of buffer/runs.ts). */
export interface RunContext {
  runId: string;
  runDir: string;
  metrics: MetricsLog;
  /** The run's resume state (start evaluated, base accuracy, stage starts): one store for every placement. */
  state: RunState;
  t0: number;
  signal?: AbortSignal;
  /** '' writes no report (monitor.report: false). */
  reportFile: string;
  reportTitle: string;
  reportExtra?: Record<string, unknown>;
  /** The run's eval set (TaskPools.evalSet and its size): with no task, nothing is evaluated. */
  evalSet: { note: string; tasks: number };
  /** Periodic evaluations in metrics from this time on go into the summary (default t0: this process's; 0: the file holds exactly the run's). */
  evalsSince?: number;
}

export interface StagesResult {
  summary: RunSummary;
  stopped: boolean;
  start: EvalResult | null;
  final: EvalResult | null;
}

/** The stage iteration of every run, whatever its placement. */
export async function runStages(cfg: RunConfig, s: Placement, o: RunContext): Promise<StagesResult> {
  const stages = stagesOf(cfg);
  const lastStage = stages.length - 1;
  const evals: RunSummary['evals'] = [];
  // A run without an eval set (TaskPools.evalSet says why) evaluates nothing: its accuracies are null.
  const noEval = o.evalSet.tasks === 0;
  const doEval = async (label: string): Promise<EvalResult | null> => {
    if (noEval) return null;
    const { result: r, step } = await s.evaluate(label);
    evals.push({
      stage: label,
      step,
      accuracy: r.accuracy,
      mean_reward: r.mean_reward,
      ...(r.infra_failures ? { infra_failures: r.infra_failures } : {}),
      ...(r.no_result ? { no_result: r.no_result } : {}),
    });
    o.metrics.write({ kind: 'eval', stage: label, step, ...r });
    noteEval(o.metrics, r, `${label} (v${step})`, label, step);
    return r;
  };
  // base_accuracy is the accuracy of the weights entering the last stage: for one stage the weights
  // the run starts from, for warm-up + MIX the warm-up's result. The starting weights are evaluated
  // once per run, and each stage's result after it.
  const trains = s.trains !== false;
  // The base evaluation that scored nothing: its reason (placements store only an accuracy, so a
  // resumed run evaluates the base again, as it does when one was never made).
  let baseNoResult: string | undefined;
  const setBase = async (r: EvalResult): Promise<void> => {
    baseNoResult = r.accuracy === null ? r.no_result : undefined;
    if (r.accuracy !== null) await o.state.setBase(r.accuracy);
  };
  let start: EvalResult | null = null;
  if (trains && !noEval && !(await o.state.startEvaluated())) {
    start = await doEval('start');
    await o.state.recordStart(start!);
    if (lastStage === 0) await setBase(start!);
  }
  let stopped = false;
  for (;;) {
    const si = await s.nextStage();
    if (si >= stages.length) break;
    if (o.signal?.aborted) {
      stopped = true;
      break;
    }
    const stage = stages[si]!;
    // A run stopped between the end of the previous stage and its eval resumes here without a base.
    if (trains && !noEval && si === lastStage && (await o.state.base()) === undefined && baseNoResult === undefined)
      await setBase((await doEval(si === 0 ? 'start' : stages[si - 1]!.name))!);
    stopped = await s.runStage(si, stage);
    if (stopped) break;
    if (trains && si < lastStage) {
      const after = await doEval(stage.name);
      if (after && si + 1 === lastStage) await setBase(after);
    }
  }
  await s.beforeFinal?.(!stopped);
  const final = !stopped || s.finalWhenStopped ? await doEval(trains ? 'final' : cfg.mode) : null;
  if (!trains && final) await setBase(final);
  // Periodic evals (monitor.eval_every) ran beside the trainer: listed in step order with these.
  // With evalsSince before t0 (a distributed run's file holds the whole run), the stage evaluations of
  // earlier trainers (the start, made on another machine) are listed too; this process's come from `evals`.
  const since = o.evalsSince ?? o.t0;
  const periodic = o.metrics
    .read()
    .filter((r) => r.kind === 'eval' && r.t >= since && (r.component === 'trainer' || r.t < o.t0))
    .map((r) => ({
      stage: String(r.stage),
      step: Number(r.step),
      accuracy: typeof r.accuracy === 'number' ? r.accuracy : null,
      mean_reward: typeof r.mean_reward === 'number' ? r.mean_reward : null,
      ...(typeof r.infra_failures === 'number' && r.infra_failures ? { infra_failures: r.infra_failures } : {}),
      ...(typeof r.no_result === 'string' ? { no_result: r.no_result } : {}),
    }));
  const allEvals = [...periodic.map((e) => ({ e, p: 0 })), ...evals.map((e) => ({ e, p: 1 }))]
    .sort((a, b) => a.e.step - b.e.step || a.p - b.p)
    .map((x) => x.e);
  const f = await s.finish();
  const finalAcc = noEval ? null : final ? final.accuracy : NaN;
  const finalNoResult = final?.accuracy === null ? final.no_result : undefined;
  // Undefined only when a stop came before the last stage began: then the newest eval before 'final' is the base.
  const fallback = final ? evals.at(-2) : evals.at(-1);
  const base = noEval || baseNoResult ? null : ((await o.state.base()) ?? (fallback ? fallback.accuracy : finalAcc));
  const baseReason =
    baseNoResult ?? (base === null && !noEval ? (fallback ? fallback.no_result : finalNoResult) : undefined);
  const summary: RunSummary = {
    run_id: o.runId,
    run_dir: o.runDir,
    base_accuracy: base,
    final_accuracy: finalAcc,
    ...(baseReason ? { base_no_result: baseReason } : {}),
    ...(finalNoResult ? { final_no_result: finalNoResult } : {}),
    evals: allEvals,
    eval_set: o.evalSet.note,
    trainer_steps: f.trainerSteps,
    explore_steps: f.exploreSteps,
    wall_seconds: (Date.now() - o.t0) / 1000,
    report: o.reportFile,
    checkpoint: f.checkpoint,
    // A resumed run keeps what it warned of before.
    warnings: runWarnings(o.metrics.read()),
    ...(stopped && s.stopReason?.() ? { stop_reason: s.stopReason()! } : {}),
  };
  if (summary.report)
    writeReport(summary.report, o.reportTitle, o.metrics.read(), {
      base_accuracy: summary.base_accuracy ?? summary.base_no_result ?? 'none (no eval set)',
      final_accuracy: summary.final_accuracy ?? summary.final_no_result ?? 'none (no eval set)',
      trainer_steps: summary.trainer_steps,
      ...(trains ? {} : { mode: cfg.mode, explore_steps: summary.explore_steps }),
      // The whole run's running time over its resumed segments (the summary's is this segment's).
      ...reportSeconds(o.metrics.read(), summary.wall_seconds),
      ...(trains ? { stages: stages.map((x) => `${x.name}:${x.algorithm.name}`).join(' -> ') } : {}),
      // The model trained (a checkpoint's own architecture and size), not the preset defaults of the config.
      model: describeRunModel(cfg)?.label ?? '',
      eval_set: summary.eval_set,
      ...(summary.warnings.length ? { warnings: summary.warnings.map((w) => w.message).join(' | ') } : {}),
      ...o.reportExtra,
    });
  return { summary, stopped, start, final };
}

/** wall_seconds of every segment together; this segment's too when the run was resumed. */
function reportSeconds(recs: Parameters<typeof runSeconds>[0], segment: number): Record<string, number> {
  const r = runSeconds(recs);
  return r.segments > 1
    ? { wall_seconds: r.seconds, segments: r.segments, wall_seconds_last_segment: segment }
    : { wall_seconds: segment };
}
