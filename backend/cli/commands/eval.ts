// `rft eval CHECKPOINT --taskset FILE|builtin:NAME [--reward NAME]`: held-out accuracy of a checkpoint.
// `rft eval CHECKPOINT --config RUN.yaml`: on the config's own eval set (its file, `format` mapping,
// pipeline), reward (workflow.reward, a task's own, or workflow.file's with trust) and eval settings.
// `--config RUN.yaml --taskset FILE`: on FILE read as that config reads it (the `format:` of the
// section naming it, else of its eval / taskset), with the config's reward and eval settings.
// `--format JSON` (`{"prompt_key": "question"}`): FILE's own mapping when no section names it.
import { InputError } from '../../core/errors.js';
import { command } from '../command.js';
import { initEngine } from '../../model/engine.js';
import { checkpointParams } from '../../model/run-model.js';
import { loadCheckpoint } from '../../model/checkpoint.js';
import { inferenceOutsideHeap } from '../../model/external-weights.js';
import { LocalRolloutModel } from '../../explorer/local-model.js';
import { resolveReward } from '../../explorer/reward-resolve.js';
import type { RewardFn } from '../../explorer/workflow.js';
import { workflows } from '../../explorer/workflows/index.js';
import { builtinTasksets } from '../../explorer/tasksets/index.js';
import { loadTaskset, formatTaskError } from '../../buffer/taskset/index.js';
import { EXIT_NO_RESULT, evaluate, type EvalOptions } from '../../coordinator/evaluate.js';
import { loadRunConfig } from '../../coordinator/load-config.js';
import { loadTasks } from '../../coordinator/setup/tasks.js';
import { evalOptions } from '../../coordinator/setup/explorer.js';
import { loadWorkspaceCode, trustedFromEnv } from '../../coordinator/workspace-code.js';
import type { Task } from '../../core/types.js';
import type { RunConfig } from '../../core/config.js';
import { resolve } from 'node:path';
import { MAPPING_KEYS, type FieldMapping } from '../../buffer/taskset/fields.js';

export const evalCommand = command({
  name: 'eval',
  args: 'CHECKPOINT',
  summary:
    "evaluate a checkpoint on a taskset, or on a run config's eval set with its reward (greedy answers; accuracy = full reward, or for reward_model:DIR the answers its threshold judges correct, as accuracy_means says)",
  flags: {
    taskset: {
      type: 'string',
      value: 'FILE|builtin:NAME',
      description: "the tasks (with --config: a file read with the config's format mapping)",
    },
    config: {
      type: 'string',
      value: 'RUN.yaml',
      description: "evaluate on the config's eval set, reward and settings",
    },
    reward: { type: 'string', value: 'NAME', description: "the reward (a built-in set's own if not given)" },
    size: { type: 'number', description: 'tasks of a built-in set (default: 200)' },
    seed: { type: 'number', description: "a built-in set's seed (default: 0)" },
    workflow: { type: 'string', value: 'NAME', description: 'the workflow (default: from the tasks)' },
    'max-new-tokens': { type: 'number', description: "the longest answer (default: 32, or the config's)" },
    'trust-workspace-code': { type: 'boolean', description: 'with --config: load its workflow.file' },
    format: {
      type: 'string',
      value: 'JSON',
      description:
        'with --taskset FILE: its own field mapping ({"prompt_key": "question"}) when no config section names it',
    },
  },
  run: async ({ positional, flags }) => {
    const dir = positional[0];
    const ts = flags.taskset;
    const configFile = flags.config;
    const format = formatFlag(flags.format, ts);
    if (!dir || (!ts && !configFile)) {
      console.error(
        'usage: rft eval CHECKPOINT --taskset FILE|builtin:NAME [--reward NAME]  or  rft eval CHECKPOINT --config RUN.yaml [--taskset FILE]',
      );
      return 2;
    }
    if (configFile) {
      for (const f of ['reward', 'size', 'seed', 'workflow'] as const)
        if (flags[f] !== undefined)
          throw new InputError(
            `--${f} does not go with --config (the config's eval set, reward and workflow are used)`,
          );
      if (ts?.startsWith('builtin:'))
        throw new InputError(
          "--taskset with --config is a file (read with the config's format mapping); for a built-in set leave --config out",
        );
      const cfg = evalOnFile(loadRunConfig(configFile), ts, format);
      await loadWorkspaceCode(cfg, flags['trust-workspace-code'] || trustedFromEnv());
      const pools = await loadTasks(cfg);
      if (pools.eval.length === 0) {
        console.error(`${configFile}: field 'eval': the config has no eval set (${pools.evalSet})`);
        return 1;
      }
      await initEngine({ modelParams: checkpointParams(dir) });
      const opts = evalOptions(cfg);
      return scoreCheckpoint(
        dir,
        pools.eval,
        pools.reward,
        { ...opts, maxNewTokens: flags['max-new-tokens'] ?? opts.maxNewTokens },
        { config: configFile, ...(ts ? { taskset: ts } : {}) },
      );
    }
    if (!ts) return 2;
    await initEngine({ modelParams: checkpointParams(dir) });
    let tasks: Task[];
    let reward = flags.reward;
    if (ts.startsWith('builtin:')) {
      const gen = builtinTasksets.get(ts.slice('builtin:'.length));
      tasks = gen.generate(flags.size ?? 200, flags.seed ?? 0, 'eval');
      reward ??= gen.reward;
    } else {
      // A dataset folder: its test split, else validation (the held-out ones).
      const r = await loadTaskset(ts, {
        defaultSplits: ['test', 'validation', 'eval'],
        ...(format ? { fields: format, defaultIds: true } : {}),
      });
      for (const n of r.notes ?? []) console.error(`note: ${n}`);
      for (const e of r.errors) console.error(formatTaskError(e));
      tasks = r.tasks;
    }
    if (tasks.length === 0) {
      // An accuracy over no task would read as 0: say there is nothing to evaluate instead.
      console.error(
        `${ts}: no valid task to evaluate${ts.startsWith('builtin:') ? '' : ' (each problem is listed above)'}`,
      );
      return 1;
    }
    if (!reward) {
      console.error('--reward NAME is required for a taskset file (e.g. exact_match, math_answer, k12)');
      return 2;
    }
    // Image tasks go through the vision workflow (the image prefix), environment tasks through multi_turn.
    const workflow =
      flags.workflow ??
      (tasks.some((t) => t.image)
        ? 'vision'
        : tasks.some((t) => typeof t.metadata?.environment === 'string')
          ? 'multi_turn'
          : 'single_turn');
    return scoreCheckpoint(
      dir,
      tasks,
      resolveReward(reward),
      { maxNewTokens: flags['max-new-tokens'] ?? 32, workflow: workflows.get(workflow) },
      { taskset: ts },
    );
  },
});

/** `--format JSON`: a mapping of the config's keys (prompt_key, …) to the file's field names. */
function formatFlag(v: string | undefined, taskset: string | undefined): FieldMapping | undefined {
  if (v === undefined) return undefined;
  if (!taskset || taskset.startsWith('builtin:'))
    throw new InputError('--format reads a taskset file: give it with --taskset FILE', { field: 'format' });
  let f: unknown;
  try {
    f = JSON.parse(v);
  } catch {
    throw new InputError(`expected a JSON object such as {"prompt_key":"question"}, got ${v}`, { field: 'format' });
  }
  if (!f || typeof f !== 'object' || Array.isArray(f))
    throw new InputError(`expected a JSON object such as {"prompt_key":"question"}, got ${v}`, { field: 'format' });
  for (const [k, x] of Object.entries(f)) {
    if (!(MAPPING_KEYS as string[]).includes(k))
      throw new InputError(`unknown key (one of ${MAPPING_KEYS.join(', ')})`, { field: `format.${k}` });
    if (typeof x !== 'string' || !x) throw new InputError('expected a field name', { field: `format.${k}` });
  }
  return f as FieldMapping;
}

/**
 * The config with FILE as its eval set, read the way the config reads it (unchanged without a
 * file). A file no section names takes `format` when given (its own mapping, as the editor reads
 * it), else the mapping of the config's eval / taskset.
 */
export function evalOnFile(cfg: RunConfig, file: string | undefined, format?: FieldMapping): RunConfig {
  if (!file) return cfg;
  const abs = resolve(file);
  const named = [cfg.eval, cfg.taskset].find((r) => r?.path !== undefined && resolve(r.path) === abs);
  const like =
    named ?? (cfg.eval?.path !== undefined ? cfg.eval : cfg.taskset.path !== undefined ? cfg.taskset : undefined);
  const evalRef: NonNullable<RunConfig['eval']> = {
    ...(like ?? {}),
    ...(!named && format ? { format: Object.keys(format).length ? format : undefined } : {}),
    path: abs,
    builtin: undefined,
    holdout: undefined,
    pipeline: named && named === cfg.eval ? named.pipeline : undefined,
    // The eval's own split of the same dataset folder; else the folder's test split (a file has none).
    split: named && named === cfg.eval ? named.split : undefined,
  } as NonNullable<RunConfig['eval']>;
  return { ...cfg, eval: evalRef };
}

/** Greedy evaluation of a checkpoint (weights outside the wasm heap when the addon allows: nothing trains); prints the JSON result line. */
async function scoreCheckpoint(
  dir: string,
  tasks: Task[],
  reward: RewardFn,
  opts: EvalOptions,
  source: Record<string, string>,
): Promise<number> {
  const ck = loadCheckpoint(dir, { external: inferenceOutsideHeap() });
  if (!ck.tokenizer) {
    console.error(`${dir}: checkpoint has no tokenizer.json`);
    return 1;
  }
  const res = await evaluate(new LocalRolloutModel(ck.model, ck.tokenizer, ck.meta.version), tasks, reward, opts);
  console.log(JSON.stringify({ checkpoint: dir, version: ck.meta.version, ...source, ...res }));
  // No answer scored: no accuracy (never 0), said on stderr with a status of its own.
  if (res.accuracy === null) {
    console.error(`rft: ${res.no_result}`);
    return EXIT_NO_RESULT;
  }
  return 0;
}
