// A run's config paths made absolute (taskset, eval, experts, workflow.file, model.checkpoint, a chat
// template file, buffer.train_from): the run folder keeps its config, and child processes start elsewhere.
// Part of run setup (setup/): nothing here imports run.ts or a placement.
import { dirname, isAbsolute, resolve } from 'node:path';
import type { RunConfig } from '../../core/config.js';
import { isTemplatePath } from '../../model/hf/chat-template.js';

/**
 * Taskset, eval and expert file paths and workflow.file are relative to the config file; a run keeps them absolute
 * (its config is copied into the run folder, and child processes start elsewhere).
 */
function isDbUrl(s: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(s);
}

export function resolveConfigPaths(cfg: RunConfig, configFile: string): RunConfig {
  const base = dirname(resolve(configFile));
  const abs = <T extends { path?: string } | undefined>(r: T): T =>
    r?.path && !isAbsolute(r.path) ? { ...r, path: resolve(base, r.path) } : r;
  const code = cfg.workflow.file;
  const workflow = code && !isAbsolute(code) ? { ...cfg.workflow, file: resolve(base, code) } : cfg.workflow;
  // model.checkpoint too (an HF folder beside the config); an HF-cache path is absolute anyway.
  const ck = cfg.model.checkpoint;
  let model = ck && !isAbsolute(ck) ? { ...cfg.model, checkpoint: resolve(base, ck) } : cfg.model;
  // model.chat_template as a template file (a name stays a name).
  const ct = model.chat_template;
  if (ct && isTemplatePath(ct) && !isAbsolute(ct)) model = { ...model, chat_template: resolve(base, ct) };
  // buffer.train_from.path: a file beside the config (a database URL stays as it is).
  const tf = cfg.buffer.train_from;
  const buffer =
    tf && !isAbsolute(tf.path) && !isDbUrl(tf.path)
      ? { ...cfg.buffer, train_from: { ...tf, path: resolve(base, tf.path) } }
      : cfg.buffer;
  // monitor.tensorboard as a folder beside the config.
  const tb = cfg.monitor.tensorboard;
  const monitor =
    typeof tb === 'string' && !isAbsolute(tb) ? { ...cfg.monitor, tensorboard: resolve(base, tb) } : cfg.monitor;
  // serve.token_file beside the config (mode serve).
  const tok = cfg.serve?.token_file;
  const serve = tok && !isAbsolute(tok) ? { ...cfg.serve!, token_file: resolve(base, tok) } : cfg.serve;
  return {
    ...cfg,
    model,
    taskset: abs(cfg.taskset),
    eval: abs(cfg.eval),
    experts: abs(cfg.experts),
    workflow,
    buffer,
    monitor,
    ...(serve ? { serve } : {}),
  };
}
