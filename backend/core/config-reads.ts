// What the run a config describes reads, by mode, stages and placement: a field it would not read is
// refused by the schema itself (RunConfigSchema's last refinement; a distributed run's schema adds
// distributedUnread), with its path and why, since a silently ignored field misleads its author. What one
// section's own fields decide (a taskset reference's kind, the tokenizer, the engine) is refined beside
// those fields in config.ts. Checked on the parsed value: a field equal to its default changes nothing and
// is not reported, so a config written back with its defaults filled in (a run folder's) stays valid.
import type { ConfigIssue, RunConfigFields } from './config.js';
import { serveUnread } from './config-serve.js';

type Add = (path: string, message: string) => void;

/** `v` is given with a value other than the schema's default. */
const set = (v: unknown, dflt?: unknown): boolean => v !== undefined && JSON.stringify(v) !== JSON.stringify(dflt);
const MIX = { name: 'mix', params: {} };

/** Fields the run (`rft run`, or the editor's Start Training) would not read. */
export function unreadByRun(c: RunConfigFields): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const add: Add = (path, message) => out.push({ path, message });
  const { mode, explorer } = c;
  const local = mode === 'explore' || mode === 'bench';
  if (c.stages) {
    // The stage loop trains in every stage (coordinator/setup/stage-data.ts stageExplores): an explore stage would train as both.
    // (Modes explore and bench read no stage mode: withoutTrainer.)
    if (!local)
      c.stages.forEach((s, i) => {
        if (s.mode === 'explore')
          add(
            `stages[${i}].mode`,
            'a stage trains: mode both (explore and train on the rollouts) or train (the buffer alone); a run that only explores is the top-level mode: explore',
          );
      });
    if (set(c.algorithm, MIX)) add('algorithm', 'not read when stages are given: each stage names its own algorithm');
    if (set(c.trainer.steps, 100))
      add('trainer.steps', 'not read when stages are given: each stage has its own steps or wall_seconds');
    if (mode === 'train')
      add(
        'mode',
        'not read when stages are given: each stage has its own mode (mode: train on a stage trains it on the buffer alone)',
      );
  }
  if (explorer.endpoint && !local)
    add('explorer.endpoint', `read in modes explore and bench only; in mode ${mode} the model being trained rolls out`);
  if (c.trainer.lr_auto && !readsLrAuto(c))
    add(
      'trainer.lr_auto',
      "read only where a stage's lr is auto (trainer.lr: auto, a stage's lr: auto, or trainer.lr unset with model.checkpoint)",
    );
  if (local) withoutTrainer(c, mode, add);
  else if ((c.stages?.map((s) => s.mode) ?? [mode]).every((m) => m === 'train')) trainsOnly(c, add);
  // Partial rollouts cut training rollouts: nothing explores for training in modes train and bench.
  if (explorer.partial_rollout && (mode === 'train' || mode === 'bench'))
    add(
      'explorer.partial_rollout',
      `not read in mode ${mode} (no training rollouts are made; evaluations always run whole)`,
    );
  if (set(explorer.partial_rollout?.loss_segments, 'all') && mode === 'explore')
    add('explorer.partial_rollout.loss_segments', 'not read in mode explore (no trainer)');
  if (set(explorer.engine, 'native') && mode !== 'both')
    add(
      'explorer.engine',
      `read in mode both only (the engine samples each synced version of the model being trained; mode ${mode} does not)`,
    );
  // A run that trains its own tokenizer lays chats out in its fixed format (the run refuses the key).
  if (c.model.chat_template !== undefined && c.model.checkpoint === undefined && c.tokenizer.path === undefined)
    add(
      'model.chat_template',
      "not read without model.checkpoint or tokenizer.path (a Hugging Face model's template; this project's own tokenizer has a fixed chat layout)",
    );
  // sync_offset is read with memory (>= 1: the explorer overlaps the trainer, placement/memory-explorer.ts).
  if (c.placement === 'memory' && set(c.restart, 1))
    add('restart', 'read with placement checkpoint only (it restarts dead explorer / trainer processes)');
  out.push(...serveUnread(c));
  return out;
}

/** Every stage trains on the buffer alone (coordinator/setup/stage-data.ts stageExplores): nothing samples rollouts or picks tasks. */
function trainsOnly(c: RunConfigFields, add: Add): void {
  const why = c.stages ? 'no stage explores: each has mode train' : 'mode train explores nothing';
  const { explorer } = c;
  if (set(explorer.workers, 1)) add('explorer.workers', `not read (${why})`);
  if (set(explorer.tasks_per_step, 8)) add('explorer.tasks_per_step', `not read (${why})`);
  if (set(explorer.repeat_times, 8)) add('explorer.repeat_times', `not read (${why})`);
  // temperature is read: the trainer recomputes log-probs at the temperature the rollouts were sampled with.
  const { sampling } = explorer;
  if (set(sampling.max_new_tokens, 16)) add('explorer.sampling.max_new_tokens', `not read (${why})`);
  if (set(sampling.top_k, 0)) add('explorer.sampling.top_k', `not read (${why})`);
  if (set(sampling.top_p, 1)) add('explorer.sampling.top_p', `not read (${why})`);
  if (set(c.taskset.selector, 'shuffle')) add('taskset.selector', `not read (${why}: no task is picked)`);
  synthesizeSteps(c).forEach((k) => add(`taskset.pipeline[${k}]`, `not read (${why}: no task is synthesized)`));
}

/** Whether any stage trains with `lr: auto` (its own lr, else trainer.lr, else the default of its model). */
function readsLrAuto(c: RunConfigFields): boolean {
  const dflt = c.model.checkpoint ? 'auto' : 1e-3;
  const lrs = c.stages ? c.stages.map((s) => s.lr ?? c.trainer.lr ?? dflt) : [c.trainer.lr ?? dflt];
  return lrs.includes('auto');
}

const synthesizeSteps = (c: RunConfigFields): number[] =>
  (c.taskset.pipeline ?? []).flatMap((s, k) => (s.name === 'synthesize' ? [k] : []));

/**
 * Modes explore and bench run in this process with no trainer (coordinator/placement/explore-bench.ts): nothing
 * trains, restarts a process or moves weights; bench only evaluates. Mode explore reads trainer.steps (or
 * the stages' steps) as its explore steps, the first stage's algorithm (its advantages), and with
 * partial rollouts the staleness bound (synchronizer timing and buffer.max_staleness, sync-plan.ts).
 */
function withoutTrainer(c: RunConfigFields, mode: 'explore' | 'bench', add: Add): void {
  const why = mode === 'bench' ? 'mode bench only evaluates the model' : 'mode explore has no trainer';
  const { explorer, synchronizer: sync } = c;
  // No trainer and one rollout model: experts go nowhere, rollout workers and periodic evals do not run.
  if (c.experts) add('experts', `not read in mode ${mode} (no trainer takes demonstrations)`);
  if (set(explorer.workers, 1))
    add('explorer.workers', `not read in mode ${mode} (the rollout model runs in this process)`);
  if (set(c.monitor.eval_every, 0))
    add('monitor.eval_every', `not read in mode ${mode} (nothing trains between evaluations)`);
  if (set(c.restart, 1)) add('restart', `not read in mode ${mode} (one process: nothing to restart)`);
  if (set(c.placement, 'checkpoint')) add('placement', `not read in mode ${mode} (one process: ${why})`);
  if (mode === 'bench' || !explorer.partial_rollout) {
    const reason = `not read in mode ${mode} (${why}${mode === 'explore' ? '; read with explorer.partial_rollout' : ''})`;
    // The schedule stays as written (sync-schedule.ts); sync_offset is filled in (0 unless one_step_off).
    if (sync.schedule !== undefined) add('synchronizer.schedule', reason);
    if (set(sync.sync_interval, 1)) add('synchronizer.sync_interval', reason);
    if (sync.schedule === undefined && set(sync.sync_offset, 0)) add('synchronizer.sync_offset', reason);
    if (set(c.buffer.max_staleness, 1)) add('buffer.max_staleness', reason);
  }
  if (c.buffer.sampler !== undefined)
    add('buffer.sampler', `not read in mode ${mode} (${why}: no rollouts are sampled for training)`);
  const trainerDefaults: Record<string, unknown> = {
    lr_decay: 'constant',
    min_lr_ratio: 0.1,
    weight_decay: 0,
    steps: 100,
  };
  // Mode explore runs trainer.steps explore steps (without stages; with them it is refused in unreadByRun).
  for (const [k, v] of Object.entries(c.trainer))
    if (!(k === 'steps' && mode === 'explore') && set(v, trainerDefaults[k]))
      add(`trainer.${k}`, `not read in mode ${mode} (${why})`);
  if (mode === 'bench') onlyEvaluates(c, why, add);
  else
    c.stages?.forEach((s, i) => {
      for (const k of ['lr', 'lr_decay', 'min_lr_ratio', 'batch_size'] as const)
        if (s[k] !== undefined) add(`stages[${i}].${k}`, `not read in mode explore (${why})`);
      if (set(s.mode, 'both'))
        add(`stages[${i}].mode`, 'not read in mode explore (every stage explores: its steps count as explore steps)');
      if (s.wall_seconds !== undefined)
        add(
          `stages[${i}].wall_seconds`,
          "not read in mode explore (it runs the stages' steps as explore steps): give steps",
        );
      if (i > 0 && set(s.algorithm, MIX))
        add(
          `stages[${i}].algorithm`,
          "not read in mode explore (the first stage's algorithm scores every step's rollouts)",
        );
    });
}

/** Mode bench: one greedy evaluation of the model, no stages, nothing stored or picked for training. */
function onlyEvaluates(c: RunConfigFields, why: string, add: Add): void {
  if (c.stages) add('stages', 'not read in mode bench (one evaluation, no stages)');
  if (set(c.algorithm, MIX)) add('algorithm', `not read in mode bench (${why})`);
  if (c.experience_pipeline) add('experience_pipeline', `not read in mode bench (${why}: no rollouts are stored)`);
  synthesizeSteps(c).forEach((k) =>
    add(`taskset.pipeline[${k}]`, 'not read in mode bench (nothing is explored, so no task is synthesized)'),
  );
  const once = `not read in mode bench (${why}: greedy, once per eval task, with explorer.eval_sampling)`;
  const { explorer } = c;
  if (set(explorer.tasks_per_step, 8)) add('explorer.tasks_per_step', once);
  if (set(explorer.repeat_times, 8)) add('explorer.repeat_times', once);
  for (const [k, dflt] of [
    ['max_new_tokens', 16],
    ['temperature', 1],
    ['top_k', 0],
    ['top_p', 1],
  ] as const)
    if (set(explorer.sampling[k], dflt)) add(`explorer.sampling.${k}`, once);
  const unpicked = `not read in mode bench (${why}: no training task is picked)`;
  if (set(c.taskset.selector, 'shuffle')) add('taskset.selector', unpicked);
  if (set(c.taskset.priority_floor, 0.1)) add('taskset.priority_floor', unpicked);
}

/**
 * A distributed run (`rft coordinator`, coordinator/distributed/): each `rft explorer` samples on one
 * thread, and the explorers and the trainer are processes their operator starts (and restarts: a run picks
 * up where its leases left off); the weights always travel as published checkpoints.
 */
export function distributedUnread(c: RunConfigFields): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  if (set(c.explorer.workers, 1))
    out.push({
      path: 'explorer.workers',
      message:
        'not read in a distributed run (each rft explorer samples on one thread): start more explorers to sample more at once',
    });
  if (set(c.restart, 1))
    out.push({
      path: 'restart',
      message:
        'not read in a distributed run (nothing supervises its explorers and trainer: restart one and it rejoins the run)',
    });
  // A bare 'postgres' names a distributed run's buffer (config-check.ts checkLocalRunConfig); a URL would be ignored.
  if (c.buffer.storage.includes('://'))
    out.push({
      path: 'buffer.storage',
      message:
        'not read in a distributed run (its buffer is the --buffer URL each rft coordinator / trainer / explorer is given): leave it out or give postgres',
    });
  if (set(c.placement, 'checkpoint'))
    out.push({
      path: 'placement',
      message:
        'not read in a distributed run (the trainer publishes checkpoints that explorers load; memory is a one-process rft run)',
    });
  return out;
}
