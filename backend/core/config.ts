// The run configuration (YAML), validated with zod: every error names the path of the bad field
// and what was expected. Defaults follow ../shared/DESIGN.md. The sections' schemas live by concern
// in config-model.ts, config-taskset.ts, config-explorer.ts, config-buffer.ts, config-trainer.ts and
// config-serve.ts; this file puts them together and validates a whole config.
import { z } from 'zod';
import { resolveSyncSchedule, SYNC_SCHEDULES, syncScheduleIssues } from './sync-schedule.js';
import { applyKeyAliases, writtenPath } from './config-aliases.js';
import { bufferSection } from './config-buffer.js';
import { explorerSection, workflowSection } from './config-explorer.js';
import { modelSection, tokenizerSection } from './config-model.js';
import { distributedUnread, unreadByRun } from './config-reads.js';
import { serveSection } from './config-serve.js';
import { evalRef, tasksetRef } from './config-taskset.js';
import { algorithmSection, stageSchema, trainerSection } from './config-trainer.js';

const runConfigObject = z
  .object({
    name: z.string().default('run'),
    mode: z.enum(['both', 'explore', 'train', 'bench', 'serve']).default('both'),
    seed: z.number().int().default(0),
    model: modelSection,
    tokenizer: tokenizerSection,
    taskset: tasksetRef('taskset'),
    /** mode serve: the OpenAI-compatible endpoint (config-serve.ts). */
    serve: serveSection.optional(),
    eval: evalRef.optional(),
    /** Expert demonstrations: a built-in generator's solutions or a file of {prompt, response}. */
    experts: tasksetRef('experts').optional(),
    workflow: workflowSection,
    algorithm: algorithmSection,
    buffer: bufferSection,
    explorer: explorerSection,
    trainer: trainerSection,
    /**
     * Where the explorer and the trainer run: checkpoint (the default, DESIGN.md: each its own process,
     * weights through checkpoint folders) or memory (one process, weights shared in memory). A
     * distributed run's placement is its command (`rft coordinator`). Was synchronizer.method.
     */
    placement: z.enum(['memory', 'checkpoint']).default('checkpoint'),
    synchronizer: z
      .object({
        /** sync: the explorer waits for the newest weights (sync_offset 0); one_step_off: it may run one version ahead (sync_offset 1); async: it never waits for weights, only buffer.max_staleness bounds what the trainer takes. Default: from sync_offset. */
        schedule: z.enum(SYNC_SCHEDULES).optional(),
        sync_interval: z.number().int().positive().default(1),
        /** Versions the explorer may run ahead of the trainer (default 0, or as synchronizer.schedule names it). */
        sync_offset: z.number().int().min(0).optional(),
      })
      .strict()
      .superRefine(syncScheduleIssues)
      .transform(resolveSyncSchedule)
      .default({}),
    stages: z.array(stageSchema).optional(),
    /**
     * Placement `checkpoint`: how often a dead explorer or trainer process is restarted before the
     * run stops. One by default: a single killed worker is absorbed (a restart resumes in about a second).
     */
    restart: z.number().int().min(0).default(1),
    /** Raw -> verified experiences: operators by name, e.g. [{name: validity}, {name: reward_filter}, {name: advantage}]. */
    experience_pipeline: z.array(z.record(z.unknown())).optional(),
    monitor: z
      .object({
        eval_every: z.number().int().min(0).default(0),
        report: z.boolean().default(true),
        /**
         * TensorBoard event files of every metric: true (default) under the run folder (RUN/tensorboard),
         * a folder (relative to the config file) to hold one subfolder per run, or false for none.
         */
        tensorboard: z.union([z.boolean(), z.string().min(1)]).default(true),
      })
      .strict()
      .default({}),
  })
  .strict()
  // One process hands the weights to the explorer after every step: no interval to keep.
  .refine((c) => c.placement !== 'memory' || c.synchronizer.sync_interval === 1, {
    message:
      'read with placement checkpoint only (placement memory hands the weights to the explorer after every step)',
    path: ['synchronizer', 'sync_interval'],
  });

/** The parsed fields, before the rules of what a run reads (config-reads.ts) are applied. */
export type RunConfigFields = z.infer<typeof runConfigObject>;

/** What a run reads (config-reads.ts) as a refinement: each issue at its path. */
function refineReads(issues: (c: RunConfigFields) => ConfigIssue[]) {
  return (c: RunConfigFields, ctx: z.RefinementCtx): void => {
    for (const i of issues(c)) ctx.addIssue({ code: 'custom', path: pathSegments(i.path), message: i.message });
  };
}

/** A run config (`rft run`, Start Training): fields its mode, stages and placement would not read are refused. */
export const RunConfigSchema = runConfigObject.superRefine(refineReads(unreadByRun));
/** A distributed run's config (`rft coordinator`): its placement is the command, and it reads fewer fields. */
const DistributedRunConfigSchema = RunConfigSchema.superRefine(refineReads(distributedUnread));

export type RunConfig = z.infer<typeof RunConfigSchema>;

export interface ConfigIssue {
  path: string;
  message: string;
}

/**
 * Validate a parsed YAML/JSON value; issues carry a dotted path like `trainer.lr`. Renamed keys load
 * under their new name (config-aliases.ts), each with a warning naming the old path. `distributed`: the
 * config of `rft coordinator`. `stored`: a config a run stored at its start, when it was checked whole:
 * its fields are checked, not what its run reads, so a run stored by a version that refused fewer
 * fields still resumes.
 */
export function validateRunConfig(
  raw: unknown,
  opts: { distributed?: boolean; stored?: boolean } = {},
): {
  config?: RunConfig;
  issues: ConfigIssue[];
  warnings: ConfigIssue[];
} {
  const infinite: ConfigIssue[] = [];
  nonFinite(raw, '', infinite);
  const aliased = applyKeyAliases(raw);
  const warnings = aliased.warnings;
  if (aliased.issues.length) return { issues: [...infinite, ...aliased.issues], warnings };
  const schema = opts.stored ? runConfigObject : opts.distributed ? DistributedRunConfigSchema : RunConfigSchema;
  const r = schema.safeParse(aliased.value);
  if (r.success && !infinite.length) return { config: r.data, issues: [], warnings };
  const issues = r.success
    ? []
    : r.error.issues.map((i) => ({
        path: i.path.length ? dottedPath(i.path) : '(root)',
        message: i.message,
      }));
  const at = (i: ConfigIssue) => ({ ...i, path: writtenPath(i.path, warnings) });
  return { issues: [...infinite, ...issues.filter((i) => !infinite.some((f) => f.path === i.path)).map(at)], warnings };
}

/** A zod issue's path as configs name fields: ['stages', 1, 'mode'] -> `stages[1].mode`. */
export function dottedPath(path: (string | number)[]): string {
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : p))
    .join('.')
    .replace(/\.\[/g, '[');
}

/** `stages[1].mode` -> ['stages', 1, 'mode'] (dottedPath read back). */
export function pathSegments(path: string): (string | number)[] {
  return path.split('.').flatMap((part) => {
    const [key, ...idx] = part.split('[');
    return [...(key ? [key] : []), ...idx.map((i) => Number(i.slice(0, -1)))];
  });
}

/** Numbers that are not finite (YAML `.inf`, `.nan`) anywhere in the config: the schema's number checks let Infinity through. */
function nonFinite(v: unknown, path: string, out: ConfigIssue[]): void {
  if (typeof v === 'number' && !Number.isFinite(v))
    out.push({ path: path || '(root)', message: `must be a finite number, got ${v}` });
  else if (Array.isArray(v)) v.forEach((x, i) => nonFinite(x, `${path}[${i}]`, out));
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) nonFinite(x, path ? `${path}.${k}` : k, out);
}
