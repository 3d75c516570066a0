// `mode: serve` (issue 43): the run serves its current policy as an OpenAI-compatible endpoint and
// trains on the episodes its callers reward. The `serve:` section, and what such a run does not read.
import { z } from 'zod';
import type { ConfigIssue, RunConfigFields } from './config.js';

export const serveSection = z
  .object({
    /** 127.0.0.1 unless allow_remote: another host exposes the policy to the network. */
    host: z.string().default('127.0.0.1'),
    allow_remote: z.boolean().default(false),
    /** 0: any free port (the run prints the one it got). */
    port: z.number().int().min(0).max(65535).default(0),
    /** A file holding the bearer token; unset: one is generated into the run folder (its path printed). */
    token_file: z.string().optional(),
    limits: z
      .object({
        max_body_bytes: z
          .number()
          .int()
          .positive()
          .default(4 * 2 ** 20),
        max_concurrent: z.number().int().positive().default(64),
        max_tokens: z.number().int().positive().default(1024),
        request_timeout_seconds: z.number().positive().default(300),
      })
      .strict()
      .default({}),
    /** An episode with no reward this long after its last call is dropped (counted, never trained as zero). */
    reward_timeout_seconds: z.number().positive().default(600),
  })
  .strict();

const set = (v: unknown, dflt?: unknown): boolean => v !== undefined && JSON.stringify(v) !== JSON.stringify(dflt);

/** Fields a serve run does not read, and a serve section outside mode serve. */
export function serveUnread(c: RunConfigFields): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  const add = (path: string, message: string) => out.push({ path, message });
  if (c.mode !== 'serve') {
    if (c.serve) add('serve', `read in mode serve only (this run's mode is ${c.mode})`);
    return out;
  }
  const s = c.serve;
  if (s && s.host !== '127.0.0.1' && s.host !== 'localhost' && s.host !== '::1' && !s.allow_remote)
    add('serve.host', `${s.host} exposes the policy beyond this machine: set serve.allow_remote: true to mean it`);
  const why = 'not read in mode serve (each request gives its own sampling; the callers are the tasks)';
  const e = c.explorer;
  if (set(e.tasks_per_step, 8)) add('explorer.tasks_per_step', why);
  if (set(e.workers, 1)) add('explorer.workers', why);
  if (e.partial_rollout) add('explorer.partial_rollout', why);
  for (const [k, d] of [
    ['max_new_tokens', 16],
    ['top_k', 0],
    ['top_p', 1],
  ] as const)
    if (set(e.sampling[k], d)) add(`explorer.sampling.${k}`, `${why}; serve.limits.max_tokens bounds a reply`);
  if (set(c.taskset.selector, 'shuffle')) add('taskset.selector', `${why}: no task is picked`);
  if (c.experts) add('experts', 'not read in mode serve (it trains on served episodes)');
  if (c.stages) add('stages', 'not read in mode serve (one stage: the top-level algorithm and trainer.steps)');
  return out;
}

/**
 * The config a serve run's trainer reads, in every placement: a served "explore step" is one task's
 * group (explorer.repeat_times episodes), so the batch is sized against that, not tasks_per_step
 * (which a serve run does not read).
 */
export function servedStageConfig<C extends { mode: string; explorer: { tasks_per_step: number } }>(cfg: C): C {
  return cfg.mode === 'serve' ? { ...cfg, explorer: { ...cfg.explorer, tasks_per_step: 1 } } : cfg;
}
