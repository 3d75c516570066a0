// `rft run CONFIG` and `rft demo` (the main job: configs/main.yaml on the embedded default).
import { InputError } from '../../core/errors.js';
import { packageFile } from '../../core/package-root.js';
import { command, existingWorkspace, WORKSPACE_FLAG } from '../command.js';
import type { FlagValues } from '../flags.js';
import { loadRunConfig } from '../../coordinator/load-config.js';
import { assertRunnableConfig } from '../../coordinator/config-check.js';
import { runJob, type RunSummary } from '../../coordinator/run.js';
import { EXIT_NO_RESULT } from '../../coordinator/evaluate.js';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { checkTaskFiles } from '../../coordinator/setup/tasks.js';
import { inspectCheckpoint } from '../../model/checkpoint.js';
import { resolveModelDir } from '../../model/hf/folder.js';
import { checkRunId } from '../../core/run-id.js';

/** The main job's config, a file of the package (not of the working directory). */
export const mainConfig = (): string => packageFile('configs', 'main.yaml');

const fix = (x: number | null): string => (x === null ? 'no result' : x.toFixed(3));

function printSummary(s: RunSummary): void {
  const rows = s.evals.map(
    (e) =>
      `| ${e.stage.padEnd(8)} | ${String(e.step).padStart(5)} | ${fix(e.accuracy).padStart(9)} | ${fix(e.mean_reward).padStart(11)} |${e.infra_failures ? ` ${e.infra_failures} infrastructure failure(s) left out` : ''}`,
  );
  console.log(
    ['| after    |  step |  accuracy | mean reward |', '|----------|-------|-----------|-------------|', ...rows].join(
      '\n',
    ),
  );
  console.log(`eval set: ${s.eval_set}`);
  console.log(`report: ${s.report}`);
  console.log(`checkpoint: ${s.checkpoint}`);
  for (const w of s.warnings) console.log(`warning: ${w.message}`);
  // The last line is the machine-readable summary (CI and benches parse it).
  console.log(
    JSON.stringify({
      base_accuracy: s.base_accuracy,
      final_accuracy: s.final_accuracy,
      ...(s.base_no_result ? { base_no_result: s.base_no_result } : {}),
      ...(s.final_no_result ? { final_no_result: s.final_no_result } : {}),
      wall_seconds: Math.round(s.wall_seconds * 10) / 10,
      report: s.report,
      run_dir: s.run_dir,
      checkpoint: s.checkpoint,
      trainer_steps: s.trainer_steps,
      eval_set: s.eval_set,
      evals: s.evals,
      warnings: s.warnings,
    }),
  );
}

const QUIET = { type: 'boolean', description: 'no progress lines' } as const;
const TRUST = {
  type: 'boolean',
  description: "load the config's workflow.file (workspace code; else RFT_TRUST_WORKSPACE_CODE=1 decides)",
} as const;

/** The flags of `rft demo`; `rft run` takes them and --trust-workspace-code. */
const RUN_FLAGS = {
  seed: { type: 'number', description: "the run's seed (default: the config's)" },
  budget: { type: 'number', value: 'SECONDS', description: "the last stage's wall-clock budget (its steps dropped)" },
  algorithm: { type: 'string', value: 'NAME', description: "the last stage's algorithm (with its defaults)" },
  check: { type: 'boolean', description: 'check the config and run nothing' },
  workspace: WORKSPACE_FLAG,
  'run-id': { type: 'string', value: 'ID', description: 'the id of the new run' },
  'checkpoint-every': { type: 'number', default: 20, description: 'trainer steps between checkpoints' },
  quiet: QUIET,
} as const;

/** The run's model.checkpoint, checked as a run loads it up to the weights (config.json, the safetensors headers, rft.json). */
function checkCheckpoint(dir: string): string {
  if (!existsSync(dir) || !existsSync(join(resolveModelDir(dir), 'config.json')))
    throw new InputError(`no checkpoint at '${dir}' (config.json missing)`, { field: 'model.checkpoint' });
  try {
    const { config } = inspectCheckpoint(dir);
    return `${dir}: ${config.nLayers} layers, vocabulary ${config.vocabSize}`;
  } catch (e) {
    throw new InputError(`checkpoint '${dir}' cannot be loaded: ${(e as Error).message}`, {
      field: 'model.checkpoint',
    });
  }
}

async function run(
  file: string,
  flags: FlagValues<typeof RUN_FLAGS> & { 'trust-workspace-code'?: boolean },
): Promise<number> {
  // Flags are checked before the config is even read (a bad --budget never reaches the trainer).
  const budget = flags.budget;
  if (budget !== undefined && !(budget > 0))
    throw new InputError(`--budget must be a positive number of seconds, got ${budget}`);
  if (flags['run-id'] !== undefined) checkRunId(flags['run-id'], '--run-id');
  const cfg = loadRunConfig(file);
  // What a local run cannot take (a bare `postgres` storage) is refused here too, so --check says it.
  assertRunnableConfig(cfg, file, { local: true });
  if (flags.check) {
    // Config checked, nothing run: says which file a command resolved (`rft demo --check`). The
    // files it names are opened and validated too (a taskset that is /etc/passwd or /dev/zero is
    // not `valid`); the checkpoint's weights are not read, only its config and headers.
    const files = await checkTaskFiles(cfg);
    const checkpoint = cfg.model.checkpoint ? checkCheckpoint(cfg.model.checkpoint) : undefined;
    console.log(
      JSON.stringify({
        config: file,
        valid: true,
        stages: (cfg.stages ?? []).map((s) => s.name),
        ...files,
        ...(checkpoint ? { checkpoint } : {}),
      }),
    );
    return 0;
  }
  if (flags.seed !== undefined) cfg.seed = flags.seed;
  if (budget !== undefined && cfg.stages) {
    // Override the wall-clock budget of the last stage (e.g. for comparisons at equal budget).
    cfg.stages[cfg.stages.length - 1]!.wall_seconds = budget;
    cfg.stages[cfg.stages.length - 1]!.steps = undefined;
  }
  const algo = flags.algorithm;
  // Swap the last stage's algorithm (with its defaults) for comparisons at the same budget.
  if (algo && cfg.stages) cfg.stages[cfg.stages.length - 1]!.algorithm = { name: algo, params: {} };
  const summary = await withSignals((signal) =>
    runJob({
      config: cfg,
      configPath: file,
      workspace: flags.workspace ?? process.cwd(),
      progress: !flags.quiet,
      runId: flags['run-id'],
      signal,
      checkpointEvery: flags['checkpoint-every'],
      ...trust(flags['trust-workspace-code']),
    }),
  );
  printSummary(summary);
  return noResult(summary);
}

/** EXIT_NO_RESULT, with the reason on stderr, when the run has an eval set and no accuracy to show for it. */
export function noResult(s: RunSummary): number {
  const why = s.final_no_result ?? s.base_no_result;
  if (!why) return 0;
  console.error(`rft: the run completed, but its evaluation has no result (${why}); exit status ${EXIT_NO_RESULT}`);
  return EXIT_NO_RESULT;
}

/** --trust-workspace-code: load the config's workflow.file (else RFT_TRUST_WORKSPACE_CODE=1 decides). */
function trust(given: boolean | undefined): { trustWorkspaceCode?: true } {
  return given ? { trustWorkspaceCode: true } : {};
}

/**
 * SIGINT / SIGTERM stop the run cleanly: the current step ends, a checkpoint is written. SIGUSR2
 * (`rft pause`) does the same with the abort reason 'pause', so the run is recorded as paused.
 */
async function withSignals<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ac = new AbortController();
  const stop = () => {
    if (ac.signal.aborted) process.exit(130);
    console.error('stopping after the current step (again to exit at once)');
    ac.abort('stop');
  };
  const pause = () => {
    if (ac.signal.aborted) return;
    console.error('pausing after the current step');
    ac.abort('pause');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  process.on('SIGUSR2', pause);
  try {
    return await fn(ac.signal);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    process.off('SIGUSR2', pause);
  }
}

export const resumeCommand = command({
  name: 'resume',
  args: 'RUN',
  summary: 'continue a run from its last checkpoint and buffer position',
  flags: {
    workspace: WORKSPACE_FLAG,
    quiet: QUIET,
    'trust-workspace-code': TRUST,
    'use-new-config': {
      type: 'boolean',
      description: 'take the config file as it is now (checked whole), not the config the run started with',
    },
    'keep-config': {
      type: 'boolean',
      description: 'resume with the config the run started with although its file changed',
    },
  },
  run: async ({ positional, flags, usage }) => {
    const id = positional[0];
    if (!id) {
      console.error(`usage: ${usage}`);
      return 2;
    }
    if (flags['use-new-config'] && flags['keep-config'])
      throw new InputError('--use-new-config and --keep-config choose opposite configs: give one');
    const summary = await withSignals((signal) =>
      runJob({
        resume: id,
        ...(flags['use-new-config'] ? { resumeConfig: 'new' as const } : {}),
        ...(flags['keep-config'] ? { resumeConfig: 'kept' as const } : {}),
        workspace: existingWorkspace(flags.workspace),
        progress: !flags.quiet,
        signal,
        ...trust(flags['trust-workspace-code']),
      }),
    );
    printSummary(summary);
    return noResult(summary);
  },
});

export const runCommand = command({
  name: 'run',
  args: 'CONFIG',
  summary:
    'run the stages of a config (explorer + trainer), evaluate, write the report; --check only validates it; --trust-workspace-code loads its workflow.file',
  flags: { ...RUN_FLAGS, 'trust-workspace-code': TRUST },
  run: ({ positional, flags, usage }) => {
    const file = positional[0];
    if (!file) {
      console.error(`usage: ${usage}`);
      return 2;
    }
    return run(file, flags);
  },
});

export const demoCommand = command({
  name: 'demo',
  summary:
    "the main job (the package's configs/main.yaml): SFT warm-up, then MIX on the built-in task, then held-out evaluation",
  flags: RUN_FLAGS,
  run: ({ flags }) => run(mainConfig(), flags),
});
