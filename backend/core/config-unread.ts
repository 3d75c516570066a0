// Fields a config may give that nothing would read in that config (the schema alone accepts them):
// a field that is silently ignored misleads its author, so each is an error naming its path and why.
// (What a taskset reference's kind does not read, the schema refuses itself: config.ts unreadByKind.)
// Checked on the raw value; a field equal to its default changes nothing and is not reported (a
// config written back with its defaults filled in, e.g. a run folder's config.yaml, stays valid).
import type { ConfigIssue } from './config.js';
import { applyKeyAliases, writtenPath } from './config-aliases.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: unknown, k: string): boolean => isObj(o) && o[k] !== undefined;
/** `o[k]` is given with a value other than the schema's default. */
const set = (o: unknown, k: string, dflt?: unknown): boolean =>
  has(o, k) && JSON.stringify((o as Obj)[k]) !== JSON.stringify(dflt);

/**
 * Issues for fields present in `raw` that the run it describes would not read. `distributed`: the
 * config of `rft coordinator` (the placement is the command, not a field), with distributedUnread's too.
 */
export function unreadFields(given: unknown, opts: { distributed?: boolean } = {}): ConfigIssue[] {
  // Renamed keys (config-aliases.ts) are checked under their new name, reported where the file wrote them.
  const { value: raw, warnings } = applyKeyAliases(given);
  if (!isObj(raw)) return [];
  return unread(raw, opts).map((i) => ({ ...i, path: writtenPath(i.path, warnings) }));
}

function unread(raw: Obj, opts: { distributed?: boolean }): ConfigIssue[] {
  const out: ConfigIssue[] = opts.distributed ? distributedUnread(raw) : [];
  const add = (path: string, message: string) => out.push({ path, message });

  const mode = raw.mode ?? 'both';
  if (Array.isArray(raw.stages)) {
    // The stage loop trains in every stage (run-loop.ts stageExplores): an explore stage would train as both.
    // (Modes explore and bench read no stage mode: withoutTrainer.)
    raw.stages.forEach((s: unknown, i) => {
      if (isObj(s) && s.mode === 'explore' && mode !== 'explore' && mode !== 'bench')
        add(
          `stages[${i}].mode`,
          'a stage trains: mode both (explore and train on the rollouts) or train (the buffer alone); a run that only explores is the top-level mode: explore',
        );
    });
    if (set(raw, 'algorithm', { name: 'mix', params: {} }))
      add('algorithm', 'not read when stages are given: each stage names its own algorithm');
    if (set(raw.trainer, 'steps', 100))
      add('trainer.steps', 'not read when stages are given: each stage has its own steps or wall_seconds');
  }
  // Fields a taskset reference's kind (generator, file, held-out share; taskset, eval, experts) does not
  // read are refused by the schema itself, beside their definitions (core/config.ts unreadByKind).
  const explorer = raw.explorer;
  if (has(explorer, 'endpoint') && mode !== 'explore' && mode !== 'bench')
    add(
      'explorer.endpoint',
      `read in modes explore and bench only; in mode ${String(mode)} the model being trained rolls out`,
    );
  if (mode === 'explore' || mode === 'bench') {
    // No trainer and one rollout model: experts go nowhere, rollout workers and periodic evals do not run.
    if (has(raw, 'experts')) add('experts', `not read in mode ${mode} (no trainer takes demonstrations)`);
    if (set(explorer, 'workers', 1))
      add('explorer.workers', `not read in mode ${mode} (the rollout model runs in this process)`);
    if (set(raw.monitor, 'eval_every', 0))
      add('monitor.eval_every', `not read in mode ${mode} (nothing trains between evaluations)`);
    const tp = isObj(raw.taskset) ? raw.taskset.pipeline : undefined;
    if (mode === 'bench' && Array.isArray(tp))
      tp.forEach((s: unknown, k) => {
        if (isObj(s) && s.name === 'synthesize')
          add(`taskset.pipeline[${k}]`, 'not read in mode bench (nothing is explored, so no task is synthesized)');
      });
    withoutTrainer(raw, mode, add);
  }
  if (Array.isArray(raw.stages) && mode === 'train')
    add(
      'mode',
      'not read when stages are given: each stage has its own mode (mode: train on a stage trains it on the buffer alone)',
    );
  // Every stage trains on the buffer alone (run-loop.ts stageExplores): nothing samples rollouts or picks tasks.
  const stageModes = Array.isArray(raw.stages)
    ? raw.stages.map((s: unknown) => (isObj(s) ? s.mode : undefined))
    : [mode];
  if (mode !== 'explore' && mode !== 'bench' && stageModes.every((m) => m === 'train')) {
    const why = Array.isArray(raw.stages) ? 'no stage explores: each has mode train' : 'mode train explores nothing';
    for (const [k, dflt] of [
      ['workers', 1],
      ['tasks_per_step', 8],
      ['repeat_times', 8],
    ] as const)
      if (set(explorer, k, dflt)) add(`explorer.${k}`, `not read (${why})`);
    // temperature is read: the trainer recomputes log-probs at the temperature the rollouts were sampled with.
    const sampling = isObj(explorer) ? explorer.sampling : undefined;
    for (const [k, dflt] of [
      ['max_new_tokens', 16],
      ['top_k', 0],
      ['top_p', 1],
    ] as const)
      if (set(sampling, k, dflt)) add(`explorer.sampling.${k}`, `not read (${why})`);
    if (set(raw.taskset, 'selector', 'shuffle')) add('taskset.selector', `not read (${why}: no task is picked)`);
    const tp = isObj(raw.taskset) ? raw.taskset.pipeline : undefined;
    if (Array.isArray(tp))
      tp.forEach((s: unknown, k) => {
        if (isObj(s) && s.name === 'synthesize')
          add(`taskset.pipeline[${k}]`, `not read (${why}: no task is synthesized)`);
      });
  }
  // Partial rollouts cut training rollouts: nothing explores for training in modes train and bench.
  if (has(explorer, 'partial_rollout') && (mode === 'train' || mode === 'bench'))
    add(
      'explorer.partial_rollout',
      `not read in mode ${String(mode)} (no training rollouts are made; evaluations always run whole)`,
    );
  if (
    isObj(explorer) &&
    isObj(explorer.partial_rollout) &&
    explorer.partial_rollout.loss_segments !== undefined &&
    mode === 'explore'
  )
    add('explorer.partial_rollout.loss_segments', 'not read in mode explore (no trainer)');
  if (set(explorer, 'engine', 'native') && mode !== 'both')
    add(
      'explorer.engine',
      `read in mode both only (the engine samples each synced version of the model being trained; mode ${String(mode)} does not)`,
    );
  // explorer.llama_cpp_gpu and workers by engine, eval_sampling but max_new_tokens: refused by the schema (config.ts).
  // tokenizer.kind / vocab_size and model.size beside a file or checkpoint: refused by the schema (config.ts).
  const tok = raw.tokenizer;
  // A run that trains its own tokenizer lays chats out in its fixed format (the run refuses the key).
  if (has(raw.model, 'chat_template') && !has(raw.model, 'checkpoint') && !has(tok, 'path'))
    add(
      'model.chat_template',
      "not read without model.checkpoint or tokenizer.path (a Hugging Face model's template; this project's own tokenizer has a fixed chat layout)",
    );
  if (raw.placement === 'memory') {
    // sync_offset is read (>= 1: the explorer overlaps the trainer, placement/memory-explorer.ts); sync_interval
    // is refused by the schema (config.ts).
    if (set(raw, 'restart', 1))
      add('restart', 'read with placement checkpoint only (it restarts dead explorer / trainer processes)');
  }
  return out;
}

/**
 * Modes explore and bench run in this process with no trainer (coordinator/placement/explore-bench.ts): nothing
 * trains, restarts a process or moves weights; bench only evaluates. Mode explore reads trainer.steps (or
 * the stages' steps) as its explore steps, the first stage's algorithm (its advantages), and with
 * partial rollouts the staleness bound (synchronizer timing and buffer.max_staleness, sync-plan.ts).
 */
function withoutTrainer(raw: Obj, mode: 'explore' | 'bench', add: (path: string, message: string) => void): void {
  const why = mode === 'bench' ? 'mode bench only evaluates the model' : 'mode explore has no trainer';
  if (set(raw, 'restart', 1)) add('restart', `not read in mode ${mode} (one process: nothing to restart)`);
  const sync = raw.synchronizer;
  if (set(raw, 'placement', 'checkpoint')) add('placement', `not read in mode ${mode} (one process: ${why})`);
  const partial = mode === 'explore' && has(raw.explorer, 'partial_rollout');
  if (!partial) {
    const reason = `not read in mode ${mode} (${why}${mode === 'explore' ? '; read with explorer.partial_rollout' : ''})`;
    // (A parsed config, as a run folder stores it, has sync_offset 0 filled in.)
    for (const [k, dflt] of [
      ['schedule', undefined],
      ['sync_interval', 1],
      ['sync_offset', 0],
    ] as const)
      if (set(sync, k, dflt)) add(`synchronizer.${k}`, reason);
    if (set(raw.buffer, 'max_staleness', 1)) add('buffer.max_staleness', reason);
  }
  if (has(raw.buffer, 'sampler'))
    add('buffer.sampler', `not read in mode ${mode} (${why}: no rollouts are sampled for training)`);
  const trainerDefaults: Record<string, unknown> = {
    lr_decay: 'constant',
    min_lr_ratio: 0.1,
    weight_decay: 0,
    steps: 100,
  };
  if (isObj(raw.trainer))
    for (const k of Object.keys(raw.trainer)) {
      // Mode explore runs trainer.steps explore steps (without stages; with them it is refused above).
      if (k === 'steps' && mode === 'explore') continue;
      if (set(raw.trainer, k, trainerDefaults[k])) add(`trainer.${k}`, `not read in mode ${mode} (${why})`);
    }
  const stages = raw.stages;
  if (mode === 'bench') {
    if (Array.isArray(stages)) add('stages', 'not read in mode bench (one evaluation, no stages)');
    if (set(raw, 'algorithm', { name: 'mix', params: {} })) add('algorithm', `not read in mode bench (${why})`);
    if (has(raw, 'experience_pipeline'))
      add('experience_pipeline', `not read in mode bench (${why}: no rollouts are stored)`);
    const once = `not read in mode bench (${why}: greedy, once per eval task, with explorer.eval_sampling)`;
    for (const [k, dflt] of [
      ['tasks_per_step', 8],
      ['repeat_times', 8],
    ] as const)
      if (set(raw.explorer, k, dflt)) add(`explorer.${k}`, once);
    const sampling = isObj(raw.explorer) ? raw.explorer.sampling : undefined;
    for (const [k, dflt] of [
      ['max_new_tokens', 16],
      ['temperature', 1],
      ['top_k', 0],
      ['top_p', 1],
    ] as const)
      if (set(sampling, k, dflt)) add(`explorer.sampling.${k}`, once);
    for (const [k, dflt] of [
      ['selector', 'shuffle'],
      ['priority_floor', 0.1],
    ] as const)
      if (set(raw.taskset, k, dflt)) add(`taskset.${k}`, `not read in mode bench (${why}: no training task is picked)`);
  } else if (Array.isArray(stages))
    stages.forEach((s: unknown, i) => {
      if (!isObj(s)) return;
      for (const k of ['lr', 'lr_decay', 'min_lr_ratio', 'batch_size'] as const)
        if (has(s, k)) add(`stages[${i}].${k}`, `not read in mode explore (${why})`);
      if (set(s, 'mode', 'both'))
        add(`stages[${i}].mode`, 'not read in mode explore (every stage explores: its steps count as explore steps)');
      if (has(s, 'wall_seconds'))
        add(
          `stages[${i}].wall_seconds`,
          "not read in mode explore (it runs the stages' steps as explore steps): give steps",
        );
      if (i > 0 && set(s, 'algorithm', { name: 'mix', params: {} }))
        add(
          `stages[${i}].algorithm`,
          "not read in mode explore (the first stage's algorithm scores every step's rollouts)",
        );
    });
}

/**
 * A distributed run (coordinator/distributed/): each `rft explorer` samples on one thread, and the
 * explorers and the trainer are processes their operator starts (and restarts: a run picks up where its
 * leases left off); the weights always travel as published checkpoints.
 */
export function distributedUnread(raw: unknown): ConfigIssue[] {
  if (!isObj(raw)) return [];
  const out: ConfigIssue[] = [];
  if (set(raw.explorer, 'workers', 1))
    out.push({
      path: 'explorer.workers',
      message:
        'not read in a distributed run (each rft explorer samples on one thread): start more explorers to sample more at once',
    });
  if (set(raw, 'restart', 1))
    out.push({
      path: 'restart',
      message:
        'not read in a distributed run (nothing supervises its explorers and trainer: restart one and it rejoins the run)',
    });
  // A bare 'postgres' names a distributed run's buffer (config-check.ts checkLocalRunConfig); a URL would be ignored.
  const storage = isObj(raw.buffer) ? raw.buffer.storage : undefined;
  if (typeof storage === 'string' && storage.includes('://'))
    out.push({
      path: 'buffer.storage',
      message:
        'not read in a distributed run (its buffer is the --buffer URL each rft coordinator / trainer / explorer is given): leave it out or give postgres',
    });
  if (set(raw, 'placement', 'checkpoint'))
    out.push({
      path: 'placement',
      message:
        'not read in a distributed run (the trainer publishes checkpoints that explorers load; memory is a one-process rft run)',
    });
  return out;
}
