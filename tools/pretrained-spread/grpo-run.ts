// One GRPO run on a model of the spread (./index.ts), the way a user runs one: a config file that
// imports the model's Hugging Face folder with `model.checkpoint`, read by loadRunConfig and run by
// runJob in this process. Returns the held-out greedy accuracy before and after (the run's own eval),
// the collapse guard's warnings, and the per-step lr and reference KL from metrics.jsonl.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { runJob } from '../../backend/coordinator/run.js';
import { type LogLevel, setLogSink } from '../../backend/core/log.js';
import { writeFamilyTasks } from './tasks.js';
import type { SpreadModel } from './index.js';

export interface GrpoRunOptions {
  /** A number, 'auto', or unset (the run's default). */
  lr?: number | 'auto';
  lora?: boolean;
  steps: number;
  tasksPerStep: number;
  repeat: number;
  seed?: number;
  /** algorithm.params (kl_coef, clip_range, ...). */
  params?: Record<string, number>;
  temperature?: number;
  warmup?: number;
  gradClip?: number;
  /** Extra YAML lines under trainer: (e.g. an lr-auto setting), indented by two spaces. */
  trainerExtra?: string;
  /**
   * Stop the run (its signal, as `rft stop` does) at its first log line after this many seconds. A
   * collapsed policy can make no trainable sample, and the explorer then refills its step without end.
   */
  capSeconds?: number;
  /**
   * Stop the run once its collapse guard has warned: the outcome is decided, and the collapsed policy
   * may make nothing trainable after it.
   */
  stopOnCollapse?: boolean;
}

export interface GrpoRunResult {
  base: number;
  final: number;
  gain: number;
  /** The guard's policy-collapse (and other) warning codes. */
  warnings: string[];
  /** lr of each train step. */
  lrs: number[];
  /** Largest reference KL of any train step. */
  maxRefKl: number;
  steps: number;
  seconds: number;
  /** Stopped (capSeconds, stopOnCollapse) before its last step. */
  stopped: boolean;
}

/** The default log sink's format (log.ts), put back after a watched run. */
function stderrSink(level: LogLevel, scope: string, msg: string, fields?: Record<string, unknown>): void {
  const extra = fields && Object.keys(fields).length ? ` ${JSON.stringify(fields)}` : '';
  process.stderr.write(`[${new Date().toISOString()}] ${level.toUpperCase()} ${scope}: ${msg}${extra}\n`);
}

/** Runs GRPO on `model` in `root/name` (a fresh folder) and reads back what the run recorded. */
export async function grpoRun(
  model: SpreadModel,
  root: string,
  name: string,
  o: GrpoRunOptions,
): Promise<GrpoRunResult> {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const files = writeFamilyTasks(model.spec.task, join(root, `tasks-${model.spec.task.name}`));
  const maxNew = model.spec.task.maxAnswerChars + 1;
  const trainer = [
    `  batch_size: ${o.tasksPerStep * o.repeat}`,
    `  steps: ${o.steps}`,
    o.lr !== undefined ? `  lr: ${o.lr}` : '',
    o.warmup !== undefined ? `  warmup_steps: ${o.warmup}` : '',
    o.gradClip !== undefined ? `  grad_clip: ${o.gradClip}` : '',
    o.trainerExtra ?? '',
  ].filter(Boolean);
  const params = o.params ? `, params: ${JSON.stringify(o.params)}` : '';
  const config = join(root, `${name}.rft.yaml`);
  writeFileSync(
    config,
    [
      `name: ${name}`,
      `seed: ${o.seed ?? 1}`,
      'model:',
      `  checkpoint: ${JSON.stringify(model.dir)}`,
      o.lora ? '  lora: { rank: 8, alpha: 16 }' : '',
      `taskset: { path: ${JSON.stringify(files.train)} }`,
      `eval: { path: ${JSON.stringify(files.eval)} }`,
      'workflow: { name: single_turn, reward: exact_match }',
      `algorithm: { name: grpo${params} }`,
      'explorer:',
      `  tasks_per_step: ${o.tasksPerStep}`,
      `  repeat_times: ${o.repeat}`,
      `  sampling: { max_new_tokens: ${maxNew}, temperature: ${o.temperature ?? 1} }`,
      `  eval_sampling: { max_new_tokens: ${maxNew} }`,
      'trainer:',
      ...trainer,
      'placement: memory',
      'monitor: { report: false }',
      '',
    ]
      .filter((l) => l !== '')
      .join('\n') + '\n',
  );
  const t0 = Date.now();
  const stop = new AbortController();
  // Watched from the log sink, which the run calls synchronously: a step that refills without end
  // never yields to a timer, but it logs every few rounds (and the guard logs its warning).
  if (o.stopOnCollapse || o.capSeconds)
    setLogSink((level, scope, msg, fields) => {
      stderrSink(level, scope, msg, fields);
      const collapse = o.stopOnCollapse && level === 'warn' && msg.startsWith('policy collapse');
      if (collapse || (o.capSeconds && Date.now() - t0 > o.capSeconds * 1000)) stop.abort('stop');
    });
  const s = await runJob({
    config: loadRunConfig(config),
    configPath: config,
    workspace: dir,
    runId: name,
    signal: stop.signal,
  }).finally(() => setLogSink(stderrSink));
  const seconds = (Date.now() - t0) / 1000;
  const train = readFileSync(join(s.run_dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((r) => r.kind === 'train');
  const base = s.base_accuracy ?? Number.NaN;
  const final = s.final_accuracy ?? Number.NaN;
  return {
    base,
    final,
    gain: final - base,
    warnings: s.warnings.map((w) => w.code),
    lrs: train.map((r) => Number(r.lr)),
    maxRefKl: Math.max(0, ...train.map((r) => (typeof r.ref_kl === 'number' ? r.ref_kl : 0))),
    steps: train.length,
    seconds,
    stopped: stop.signal.aborted,
  };
}
