// Fields a config may give that nothing would read in that config (the schema alone accepts them):
// a field that is silently ignored misleads its author, so each is an error naming its path and why.
// Checked on the raw value; a field equal to its default changes nothing and is not reported (a
// config written back with its defaults filled in, e.g. a run folder's config.yaml, stays valid).
import type { ConfigIssue } from './config.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const has = (o: unknown, k: string): boolean => isObj(o) && o[k] !== undefined;
/** `o[k]` is given with a value other than the schema's default. */
const set = (o: unknown, k: string, dflt?: unknown): boolean =>
  has(o, k) && JSON.stringify((o as Obj)[k]) !== JSON.stringify(dflt);

/** Issues for fields present in `raw` that the run it describes would not read. */
export function unreadFields(raw: unknown): ConfigIssue[] {
  if (!isObj(raw)) return [];
  const out: ConfigIssue[] = [];
  const add = (path: string, message: string) => out.push({ path, message });

  if (Array.isArray(raw.stages)) {
    if (set(raw, 'algorithm', { name: 'mix', params: {} }))
      add('algorithm', 'not read when stages are given: each stage names its own algorithm');
    if (set(raw.trainer, 'steps', 100))
      add('trainer.steps', 'not read when stages are given: each stage has its own steps or wall_seconds');
  }
  for (const name of ['taskset', 'eval', 'experts'] as const) {
    const ref = raw[name];
    if (!isObj(ref)) continue;
    if (ref.path !== undefined)
      for (const [k, dflt] of [
        ['size', 1000],
        ['seed', 0],
        ['split', undefined],
      ] as const)
        if (set(ref, k, dflt))
          add(`${name}.${k}`, `describes a built-in generator; a file (${name}.path) is used as it is`);
    // A held-out share reads its seed (which tasks) and pipeline; its size is the share, its tasks the taskset's.
    if (ref.holdout !== undefined)
      for (const [k, dflt] of [
        ['size', 1000],
        ['split', undefined],
      ] as const)
        if (set(ref, k, dflt))
          add(`${name}.${k}`, `describes a built-in generator; eval.holdout takes its share of the taskset`);
    if (name !== 'taskset' && Array.isArray(ref.pipeline))
      ref.pipeline.forEach((s: unknown, k) => {
        if (isObj(s) && s.name === 'synthesize')
          add(`${name}.pipeline[${k}]`, 'synthesize makes training tasks: it is read in taskset.pipeline only');
      });
    if (name !== 'taskset' && set(ref, 'selector', 'shuffle'))
      add(`${name}.selector`, `only taskset.selector picks tasks; the ${name} set is used whole`);
    if (set(ref, 'priority_floor', 0.1) && (name !== 'taskset' || (ref.selector ?? 'shuffle') !== 'priority'))
      add(
        `${name}.priority_floor`,
        name === 'taskset'
          ? `read with taskset.selector priority only (selector ${String(ref.selector ?? 'shuffle')} weighs no task)`
          : `only taskset.selector picks tasks; the ${name} set is used whole`,
      );
  }
  const mode = raw.mode ?? 'both';
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
  if (
    set(explorer, 'llama_cpp_gpu', 'auto') &&
    !(isObj(explorer) && (explorer.engine === 'llama-cpp' || explorer.engine === 'auto'))
  )
    add(
      'explorer.llama_cpp_gpu',
      `read with explorer.engine llama-cpp or auto only (engine ${String((isObj(explorer) && explorer.engine) ?? 'native')} samples with this project's decode)`,
    );
  if (set(explorer, 'engine', 'native') && mode !== 'both')
    add(
      'explorer.engine',
      `read in mode both only (the engine samples each synced version of the model being trained; mode ${String(mode)} does not)`,
    );
  // (auto reads workers: its native side runs on them.)
  if (isObj(explorer) && explorer.engine === 'llama-cpp' && set(explorer, 'workers', 1))
    add('explorer.workers', 'not read with explorer.engine llama-cpp (one llama.cpp context samples every sequence)');
  if (isObj(explorer) && isObj(explorer.eval_sampling))
    for (const [k, dflt] of [
      ['temperature', 1],
      ['top_k', 0],
      ['top_p', 1],
    ] as const)
      if (set(explorer.eval_sampling, k, dflt))
        add(`explorer.eval_sampling.${k}`, 'evaluation is greedy: only max_new_tokens is read');
  const tok = raw.tokenizer;
  if (has(tok, 'path')) {
    for (const [k, dflt] of [
      ['kind', 'char'],
      ['vocab_size', undefined],
    ] as const)
      if (set(tok, k, dflt)) add(`tokenizer.${k}`, 'not read with tokenizer.path (the file is the tokenizer)');
  } else if (has(tok, 'vocab_size') && (tok as Obj).kind !== 'bpe')
    add('tokenizer.vocab_size', 'read for kind bpe only (a char tokenizer has one token per character)');
  if (has(raw.model, 'checkpoint') && set(raw.model, 'size', 'tiny-0.4m'))
    add('model.size', "not read with model.checkpoint (the checkpoint's config sets the size)");
  // A run that trains its own tokenizer lays chats out in its fixed format (the run refuses the key).
  if (has(raw.model, 'chat_template') && !has(raw.model, 'checkpoint') && !has(tok, 'path'))
    add(
      'model.chat_template',
      "not read without model.checkpoint or tokenizer.path (a Hugging Face model's template; this project's own tokenizer has a fixed chat layout)",
    );
  const sync = raw.synchronizer;
  if (isObj(sync) && sync.method === 'memory') {
    // sync_offset is read (>= 1: the explorer overlaps the trainer, placement/memory-explorer.ts); one process publishes after every step.
    if (set(sync, 'sync_interval', 1))
      add(
        'synchronizer.sync_interval',
        'read with method checkpoint only (method memory hands the weights to the explorer after every step)',
      );
    if (set(raw, 'restart', 1))
      add('restart', 'read with synchronizer method checkpoint only (it restarts dead explorer / trainer processes)');
  }
  return out;
}
