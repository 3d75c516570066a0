// A run config checked whole before any work starts: every stage's algorithm and its parameters
// (names, numbers, the expert ratio's bounds), the sampler, the storage, the workflow and reward,
// built-in tasksets, selectors and pipeline operators, each against its registry. The schema
// (core/config.ts) checks shapes and finite numbers; this checks names and combinations, so that a
// typo in the third stage fails at start, not after two stages have trained. Every issue names its
// path, e.g. `stages[1].algorithm.params.expert_ratio`.
import type { ConfigIssue, RunConfig } from '../core/config.js';
import { advantageFns, algorithms, policyLosses, toCamel } from '../trainer/algorithms/index.js';
import { resolveAlgorithm } from '../trainer/resolve-algorithm.js';
import { samplers } from '../buffer/sampler/index.js';
import { storages, schemeOf } from '../buffer/storage/index.js';
import { taskSelectors } from '../buffer/taskset/index.js';
import { TaskPipeline } from '../buffer/pipeline/task/pipeline.js';
import { ExperiencePipeline } from '../buffer/pipeline/experience/index.js';
import { PipelineConfigError } from '../buffer/pipeline/task/operator-spec.js';
import { workflows } from '../explorer/workflows/index.js';
import { rewardFns } from '../explorer/rewards/index.js';
import { rewardFactories } from '../explorer/reward-resolve.js';
import { builtinTasksets } from '../explorer/tasksets/index.js';
import { AUGMENTABLE_BUILTINS } from '../explorer/task-proposers.js';
import { InputError } from '../core/errors.js';
import { closest } from '../core/closest.js';
import { exploringBatchIssue } from './stage-batch.js';
import { expertSourceIssue } from './expert-source.js';
import { stageExpertRatio, stageReads } from './setup/stage-data.js';

type Add = (path: string, message: string) => void;

function unknownName(kind: string, name: string, known: string[]): string {
  const near = closest(name, known);
  return `unknown ${kind} '${name}'${near ? ` (did you mean '${near}'?)` : ''}; known: ${known.join(', ')}`;
}

/** The stages the run will go through, each with the path of its algorithm. */
function stagesOf(
  cfg: RunConfig,
): { base: string; name: string; params: Record<string, unknown>; explores: boolean }[] {
  const runExplores = cfg.mode === 'both' || cfg.mode === 'explore' || cfg.mode === 'bench' || cfg.mode === 'serve';
  if (!cfg.stages?.length)
    return [{ base: 'algorithm', name: cfg.algorithm.name, params: cfg.algorithm.params, explores: runExplores }];
  return cfg.stages.map((s, i) => ({
    base: `stages[${i}].algorithm`,
    name: s.algorithm.name,
    params: s.algorithm.params,
    explores: runExplores && s.mode !== 'train',
  }));
}

function checkAlgorithm(s: ReturnType<typeof stagesOf>[number], trains: boolean, add: Add): void {
  if (!algorithms.has(s.name)) return add(`${s.base}.name`, unknownName('algorithm', s.name, algorithms.names()));
  let bad = false;
  for (const [key, value] of Object.entries(s.params)) {
    const at = `${s.base}.params.${key}`;
    if (key === 'expert_ratio' || key === 'expertRatio') {
      if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
        add(at, `must be a number from 0 to 1 (the expert share of each batch), got ${JSON.stringify(value)}`);
        bad = true;
        continue;
      }
      if (value === 1 && s.explores && trains && algorithms.get(s.name).schema === 'experience') {
        add(
          at,
          `1 leaves no room in the batch for the rollouts this stage explores: use a value below 1, or algorithm sft (or stage mode train) for expert data only`,
        );
        bad = true;
        continue;
      }
    }
    const dflt = defaultOf(s.name, key);
    if (typeof dflt === 'number' && (typeof value !== 'number' || !Number.isFinite(value))) {
      add(at, `expected a number (default ${dflt}), got ${JSON.stringify(value)}`);
      bad = true;
      continue;
    }
    // Each parameter alone, so an error names its own key (unknown name, wrong type, out of range).
    try {
      resolveAlgorithm(s.name, { [key]: value });
    } catch (e) {
      const msg = (e as Error).message.replace(/^algorithm '[^']*': /, '').replace(/^algorithm\.params\.[a-z_]+: /, '');
      add(
        at,
        /unknown parameter/.test(msg)
          ? `${msg.replace(/unknown parameter '[^']*'/, 'unknown parameter')}${near(key, msg)}`
          : msg,
      );
      bad = true;
    }
  }
  if (bad) return;
  try {
    resolveAlgorithm(s.name, s.params);
  } catch (e) {
    add(`${s.base}.params`, (e as Error).message);
  }
}

/** The default of a policy-loss or advantage parameter of an algorithm (its type is the parameter's type). */
function defaultOf(name: string, key: string): unknown {
  const b = algorithms.get(name);
  const k = toCamel(key);
  const pl = policyLosses.get(b.policyLoss.fn).defaults as Record<string, unknown>;
  if (k in pl) return pl[k];
  const adv = b.advantage ? (advantageFns.get(b.advantage.fn).defaults as Record<string, unknown>) : {};
  return adv[k];
}

/** "did you mean" for a misspelt parameter, from the known list in the message. */
function near(key: string, msg: string): string {
  const known = /known: (.*)$/.exec(msg)?.[1]?.split(', ') ?? [];
  const snake = known.map((k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
  const n = closest(key, snake);
  return n ? ` (did you mean '${n}'?)` : '';
}

function checkPipeline(build: () => unknown, add: Add, path: string): void {
  try {
    build();
  } catch (e) {
    if (e instanceof PipelineConfigError) for (const i of e.issues) add(i.path, i.message);
    else add(path, (e as Error).message);
  }
}

/** Every problem of a schema-valid config that the registries can tell before the run starts. */
export function checkRunConfig(cfg: RunConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const add: Add = (path, message) => void issues.push({ path, message });
  const trains = cfg.mode === 'both' || cfg.mode === 'train' || cfg.mode === 'serve';
  for (const s of stagesOf(cfg)) checkAlgorithm(s, trains, add);

  if (cfg.buffer.sampler === undefined) {
    // The mode's default (setup/trainer.ts usualSampler).
  } else if (!samplers.has(cfg.buffer.sampler))
    add('buffer.sampler', unknownName('sampler', cfg.buffer.sampler, samplers.names()));
  // The pair sampler is what dpo stages take by themselves; as the rollout sampler it would feed pairs to any algorithm.
  else if (cfg.buffer.sampler === 'pairs')
    add(
      'buffer.sampler',
      "'pairs' is taken by dpo stages by themselves; buffer.sampler reads rollouts (fifo, fresh or priority)",
    );
  const st = cfg.buffer.storage;
  // A storage name (sqlite: the run's own buffer.db; postgres: the URL given to the distributed commands) or a database URL.
  if (!storages.has(st) && !(/^[a-z][a-z0-9+.-]*:\/\//i.test(st) && storages.has(schemeOf(st)))) {
    add(
      'buffer.storage',
      `'${st}' is neither a storage (${storages.names().join(', ')}) nor a database URL like postgres://user@host/db${closest(st, ['sqlite', 'postgres']) ? ` (did you mean '${closest(st, ['sqlite', 'postgres'])}'?)` : ''}`,
    );
  }

  // buffer.train_from feeds stages that train on the buffer alone; with none it would be read by nothing.
  if (cfg.buffer.train_from && !(cfg.stages ? cfg.stages.some((s) => s.mode === 'train') : cfg.mode === 'train')) {
    add(
      'buffer.train_from',
      cfg.stages
        ? 'no stage has mode: train (the stages that train on the buffer alone read it)'
        : `mode: ${cfg.mode} does not train on the buffer alone; buffer.train_from needs mode: train`,
    );
  }

  // With workflow.file the names may be the file's: checked once it is loaded (workspace-code.ts).
  const code = cfg.workflow.file !== undefined;
  if (!code && !workflows.has(cfg.workflow.name))
    add('workflow.name', unknownName('workflow', cfg.workflow.name, workflows.names()));
  const reward = cfg.workflow.reward;
  if (reward !== undefined && reward !== 'environment' && !(code && !reward.includes(':'))) {
    const colon = reward.indexOf(':');
    if (colon < 0 && !rewardFns.has(reward))
      add('workflow.reward', unknownName('reward function', reward, [...rewardFns.names(), 'environment']));
    if (colon >= 0 && !rewardFactories.has(reward.slice(0, colon)))
      add('workflow.reward', unknownName('reward factory', reward.slice(0, colon), rewardFactories.names()));
  }

  for (const name of ['taskset', 'eval', 'experts'] as const) {
    const ref = cfg[name];
    if (!ref) continue;
    if (ref.builtin && !builtinTasksets.has(ref.builtin))
      add(`${name}.builtin`, unknownName('built-in taskset', ref.builtin, builtinTasksets.names()));
    if (ref.pipeline)
      checkPipeline(() => TaskPipeline.fromConfig(ref.pipeline, {}, `${name}.pipeline`), add, `${name}.pipeline`);
  }
  // An augmenter exists for some domains only: on another built-in generator every proposal would be refused.
  const synthAt = Array.isArray(cfg.taskset.pipeline)
    ? cfg.taskset.pipeline.findIndex((s) => s.name === 'synthesize' && s.proposer === 'augment')
    : -1;
  if (synthAt >= 0 && cfg.taskset.builtin && !AUGMENTABLE_BUILTINS.includes(cfg.taskset.builtin))
    add(
      `taskset.pipeline[${synthAt}].proposer`,
      `no exact augmenter for built-in '${cfg.taskset.builtin}' (augment takes ${AUGMENTABLE_BUILTINS.join(', ')}); use proposer model or endpoint`,
    );
  if (!taskSelectors.has(cfg.taskset.selector))
    add('taskset.selector', unknownName('task selector', cfg.taskset.selector, taskSelectors.names()));
  if (cfg.experience_pipeline)
    checkPipeline(
      () => ExperiencePipeline.fromConfig(cfg.experience_pipeline, { advantage: () => true }),
      add,
      'experience_pipeline',
    );
  checkPartialRollout(cfg, add);
  if (trains) checkBatchSizes(cfg, add);
  return issues;
}

/** An exploring stage's configured batch must hold at least one explore step's rollouts (stage-batch.ts), or it says the batch that does. */
function checkBatchSizes(cfg: RunConfig, add: Add): void {
  const stages = cfg.stages ?? [{ algorithm: cfg.algorithm, mode: cfg.mode, batch_size: undefined }];
  stages.forEach((s, i) => {
    if (!algorithms.has(s.algorithm.name)) return;
    let reads;
    try {
      reads = stageReads(s.algorithm);
    } catch {
      return; // reported by checkAlgorithm
    }
    // Only a stage that trains on the step's rollouts (not DPO's pairs, not SFT's expert rows).
    if (cfg.mode !== 'both' || s.mode === 'train' || (reads !== 'rollouts' && reads !== 'mixed')) return;
    const issue = exploringBatchIssue(cfg, s, cfg.stages ? i : undefined, stageExpertRatio(s.algorithm));
    if (issue) add(issue.path, issue.message);
  });
}

/** Partial rollouts continue a single-turn sample from its tokens; what cannot be continued that way is refused (every placement, distributed too). */
export function partialRolloutIssues(cfg: RunConfig): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  checkPartialRollout(cfg, (path, message) => void issues.push({ path, message }));
  return issues;
}

function checkPartialRollout(cfg: RunConfig, add: Add): void {
  const p = cfg.explorer.partial_rollout;
  if (!p) return;
  const at = 'explorer.partial_rollout';
  if (cfg.workflow.name !== 'single_turn' || cfg.workflow.file !== undefined)
    add(
      at,
      `continues single_turn samples only (workflow.name is '${cfg.workflow.name}'${cfg.workflow.file !== undefined ? ', from workflow.file' : ''}): multi-turn episodes and vision prefixes are not cut`,
    );
  if (cfg.explorer.endpoint && (cfg.mode === 'explore' || cfg.mode === 'bench'))
    add(
      at,
      'an OpenAI-compatible endpoint (explorer.endpoint) answers chat messages; a sample cannot be continued from its tokens there',
    );
  if (p.max_tokens_per_step >= cfg.explorer.sampling.max_new_tokens)
    add(
      `${at}.max_tokens_per_step`,
      `${p.max_tokens_per_step} >= explorer.sampling.max_new_tokens (${cfg.explorer.sampling.max_new_tokens}): no trajectory would ever be cut; give a smaller budget or leave partial_rollout out`,
    );
}

/**
 * What only a local run (`rft run`: memory, checkpoint or explore/bench placement) cannot take: a
 * bare storage name other than sqlite. `postgres` alone names the buffer of a distributed run, whose
 * URL comes from `--buffer`; a local run would otherwise open a file called `postgres`.
 */
export function checkLocalRunConfig(cfg: RunConfig): ConfigIssue[] {
  const st = cfg.buffer.storage;
  // A local run's own buffer starts empty: a stage that samples expert rows needs `experts` (expert-source.ts).
  if (st === 'sqlite') return expertSourceIssues(cfg);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(st)) return [];
  return [
    {
      path: 'buffer.storage',
      message: `'${st}' without a URL is the storage of a distributed run (rft coordinator/trainer/explorer --buffer URL); a local run takes 'sqlite' (its own buffer.db) or a database URL like postgres://user@host:5432/db`,
    },
  ];
}

/** Each training stage (not DPO) that samples expert rows where a new local run has none, at its algorithm. */
function expertSourceIssues(cfg: RunConfig): ConfigIssue[] {
  if (!(cfg.mode === 'both' || cfg.mode === 'train' || cfg.mode === 'serve')) return [];
  const stages = cfg.stages ?? [{ algorithm: cfg.algorithm }];
  return stages.flatMap((s, i) => {
    if (!algorithms.has(s.algorithm.name)) return [];
    let ratio: number;
    try {
      if (stageReads(s.algorithm) === 'pairs') return [];
      ratio = stageExpertRatio(s.algorithm);
    } catch {
      return []; // reported by checkAlgorithm
    }
    const issue = expertSourceIssue(cfg, cfg.stages ? `stages[${i}].algorithm` : 'algorithm', ratio);
    return issue ? [issue] : [];
  });
}

/** Throws an InputError listing every issue (file and path each) when the config is not runnable. */
export function assertRunnableConfig(cfg: RunConfig, file?: string, opts: { local?: boolean } = {}): void {
  const issues = [...checkRunConfig(cfg), ...(opts.local ? checkLocalRunConfig(cfg) : [])];
  if (!issues.length) return;
  const lines = issues.map((i) => `${file ? `${file}: ` : ''}field '${i.path}': ${i.message}`);
  throw new InputError(`invalid config, ${issues.length} problem(s):\n  ${lines.join('\n  ')}`, {
    ...(file ? { file } : {}),
    field: issues[0]!.path,
  });
}
