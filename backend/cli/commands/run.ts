// `rft run CONFIG` and `rft demo` (the main job: configs/main.yaml on the embedded default).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { InputError } from '../../core/errors.js';
import { checkTaskFiles } from '../../coordinator/setup/tasks.js';
import { inspectCheckpoint } from '../../model/checkpoint.js';
import { resolveModelDir } from '../../model/hf/folder.js';
import { packageFile } from '../../core/package-root.js';
import { command, existingWorkspace, flagNumber, flagString, type ParsedArgs } from '../command.js';
import { loadRunConfig } from '../../coordinator/load-config.js';
import { assertRunnableConfig } from '../../coordinator/config-check.js';
import { runJob, type RunSummary } from '../../coordinator/run.js';
import { checkRunId } from '../../core/run-id.js';

/** The main job's config, a file of the package (not of the working directory). */
export const mainConfig = (): string => packageFile('configs', 'main.yaml');

function printSummary(s: RunSummary): void {
  const rows = s.evals.map(
    (e) =>
      `| ${e.stage.padEnd(8)} | ${String(e.step).padStart(5)} | ${e.accuracy.toFixed(3).padStart(8)} | ${e.mean_reward.toFixed(3).padStart(11)} |`,
  );
  console.log(
    ['| after    |  step | accuracy | mean reward |', '|----------|-------|----------|-------------|', ...rows].join(
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

async function run(file: string, args: ParsedArgs): Promise<number> {
  // Flags are checked before the config is even read (a bad --budget never reaches the trainer).
  const budget = args.flags.budget === undefined ? undefined : flagNumber(args, 'budget', 0);
  if (budget !== undefined && !(budget > 0))
    throw new InputError(`--budget must be a positive number of seconds, got ${budget}`);
  flagNumber(args, 'seed', 0);
  flagNumber(args, 'checkpoint-every', 20);
  const runId = flagString(args, 'run-id');
  if (runId !== undefined) checkRunId(runId, '--run-id');
  const cfg = loadRunConfig(file);
  // What a local run cannot take (a bare `postgres` storage) is refused here too, so --check says it.
  assertRunnableConfig(cfg, file, { local: true });
  if (args.flags.check) {
    // Config checked, nothing run: says which file a command resolved (`rft demo --check`). The
    // files it names are opened and validated too (a taskset that is /etc/passwd or /dev/zero is
    // not `valid`); the checkpoint's weights are not read, only its config and headers.
    const files = checkTaskFiles(cfg);
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
  if (args.flags.seed !== undefined) cfg.seed = flagNumber(args, 'seed', cfg.seed);
  if (budget !== undefined && cfg.stages) {
    // Override the wall-clock budget of the last stage (e.g. for comparisons at equal budget).
    cfg.stages[cfg.stages.length - 1]!.wall_seconds = budget;
    cfg.stages[cfg.stages.length - 1]!.steps = undefined;
  }
  const algo = flagString(args, 'algorithm');
  // Swap the last stage's algorithm (with its defaults) for comparisons at the same budget.
  if (algo && cfg.stages) cfg.stages[cfg.stages.length - 1]!.algorithm = { name: algo, params: {} };
  const summary = await withSignals((signal) =>
    runJob({
      config: cfg,
      configPath: file,
      workspace: flagString(args, 'workspace') ?? process.cwd(),
      progress: !args.flags.quiet,
      runId: flagString(args, 'run-id'),
      signal,
      checkpointEvery: flagNumber(args, 'checkpoint-every', 20),
      ...trust(args),
    }),
  );
  printSummary(summary);
  return 0;
}

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

/** --trust-workspace-code: load the config's workflow.file (else RFT_TRUST_WORKSPACE_CODE=1 decides). */
function trust(args: ParsedArgs): { trustWorkspaceCode?: true } {
  return args.flags['trust-workspace-code'] ? { trustWorkspaceCode: true } : {};
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

command({
  name: 'resume',
  usage: 'resume RUN [--workspace DIR] [--quiet] [--trust-workspace-code]',
  summary: 'continue a run from its last checkpoint and buffer position',
  flags: ['workspace'],
  booleanFlags: ['quiet', 'trust-workspace-code'],
  run: async (args) => {
    const id = args.positional[0];
    if (!id) {
      console.error('usage: rft resume RUN');
      return 2;
    }
    const summary = await withSignals((signal) =>
      runJob({ resume: id, workspace: existingWorkspace(args), progress: !args.flags.quiet, signal, ...trust(args) }),
    );
    printSummary(summary);
    return 0;
  },
});

command({
  name: 'run',
  usage: 'run CONFIG [--seed N] [--budget SECONDS] [--algorithm NAME] [--check] [--trust-workspace-code]',
  summary:
    'run the stages of a config (explorer + trainer), evaluate, write the report; --check only validates it; --trust-workspace-code loads its workflow.file',
  flags: ['workspace', 'run-id', 'seed', 'budget', 'algorithm', 'checkpoint-every'],
  booleanFlags: ['quiet', 'check', 'trust-workspace-code'],
  run: (args) => {
    const file = args.positional[0];
    if (!file) {
      console.error('usage: rft run CONFIG');
      return 2;
    }
    return run(file, args);
  },
});

command({
  name: 'demo',
  usage: 'demo [--seed N] [--budget SECONDS] [--algorithm NAME] [--check]',
  summary:
    "the main job (the package's configs/main.yaml): SFT warm-up, then MIX on the built-in task, then held-out evaluation",
  flags: ['workspace', 'run-id', 'seed', 'budget', 'algorithm', 'checkpoint-every'],
  booleanFlags: ['quiet', 'check'],
  run: (args) => run(mainConfig(), args),
});
