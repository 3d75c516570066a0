// The run configuration (YAML), validated with zod: every error names the path of the bad field
// and what was expected. Defaults follow ../shared/DESIGN.md.
import { z } from 'zod';
import { LoraConfigSchema } from './lora-config.js';
import { resolveSyncSchedule, SYNC_SCHEDULES, syncScheduleIssues } from './sync-schedule.js';
import { applyKeyAliases, writtenPath } from './config-aliases.js';
import { distributedUnread, unreadByRun } from './config-reads.js';
import { serveSection } from './config-serve.js';

/** The longest model.max_seq_len a run config may ask for (a 128k context). */
export const MAX_SEQ_LEN = 131_072;

const samplingObject = z
  .object({
    max_new_tokens: z.number().int().positive().default(16),
    temperature: z.number().min(0).default(1),
    top_k: z.number().int().min(0).default(0),
    top_p: z.number().gt(0).max(1).default(1),
  })
  .strict();
const sampling = samplingObject.default({});
/** Held-out evaluations decode greedily (coordinator/setup/explorer.ts evalOptions): only max_new_tokens is read. */
const evalSampling = samplingObject
  .superRefine((s, ctx) => {
    for (const [k, dflt] of [
      ['temperature', 1],
      ['top_k', 0],
      ['top_p', 1],
    ] as const)
      if (s[k] !== dflt)
        ctx.addIssue({ code: 'custom', path: [k], message: 'evaluation is greedy: only max_new_tokens is read' });
  })
  .default({});

const tasksetObject = z.object({
  /** A built-in generator (e.g. 'reverse', 'arithmetic') or a file of the workspace. */
  builtin: z.string().optional(),
  path: z.string().optional(),
  /** For built-in generators: how many tasks and from which seed. */
  size: z.number().int().positive().default(1000),
  seed: z.number().int().default(0),
  /**
   * Which split: a built-in generator's (train or eval), or a dataset folder's (`path` a hub cache
   * entry or a folder of split files: any split it has, `CONFIG/SPLIT` where several configs have it).
   * Default: train for taskset and experts; eval (a folder: test, else validation) for eval.
   */
  split: z
    .string()
    .regex(/^(\w[\w.-]*\/)?\w+(\.\w+)*$/, 'expected a split name (train, test, validation, CONFIG/SPLIT)')
    .optional(),
  selector: z.string().default('shuffle'),
  /**
   * Selector priority: the smallest weight a task is drawn with. A task's weight is 1 - its success
   * rate (1 = never solved), so a solved task still comes back, at this fraction of the chance of a
   * task never solved (catching what the policy forgets); 0 never draws a solved task again.
   */
  priority_floor: z.number().min(0).max(1).default(0.1),
  /** A file's own field names (`path` only): `{prompt_key: question, response_key: answer, ...}`. */
  format: z
    .object({
      prompt_key: z.string().min(1).optional(),
      response_key: z.string().min(1).optional(),
      id_key: z.string().min(1).optional(),
      system_prompt_key: z.string().min(1).optional(),
      tests_key: z.string().min(1).optional(),
      image_key: z.string().min(1).optional(),
      reward_key: z.string().min(1).optional(),
    })
    .strict()
    .optional(),
  /** Domain of a file's records without a `domain` field (`path` only; default math, experts text). */
  domain: z.enum(['math', 'code', 'k12', 'vision', 'multiturn', 'text']).optional(),
  /** Task pipeline operators applied before the explorer sees the tasks, e.g. [{name: dedupe}]. */
  pipeline: z.array(z.record(z.unknown())).optional(),
});

type RefName = 'taskset' | 'eval' | 'experts';
type TasksetFields = z.infer<typeof tasksetObject> & { holdout?: number };

/**
 * What a taskset reference gives that its kind does not read (a silently ignored field misleads its
 * author): a file is used as it is (no size or seed; split picks a dataset folder's files); a held-out share reads its seed (which
 * tasks) and pipeline, its size is the share; only the training taskset picks tasks (selector,
 * priority_floor) and synthesizes new ones. A field equal to its default changes nothing and is not
 * reported, so a config written back with its defaults (a run folder's) stays valid.
 */
function unreadByKind(name: RefName) {
  return (t: TasksetFields, ctx: z.RefinementCtx): void => {
    const add = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const generatorOnly: [keyof TasksetFields, unknown][] =
      t.path !== undefined
        ? [
            ['size', 1000],
            ['seed', 0],
          ]
        : t.holdout !== undefined
          ? [
              ['size', 1000],
              ['split', undefined],
            ]
          : [];
    if (t.builtin !== undefined && t.split !== undefined && t.split !== 'train' && t.split !== 'eval')
      add(['split'], `a built-in generator has the splits train and eval, got '${t.split}'`);
    for (const [k, dflt] of generatorOnly)
      if (t[k] !== dflt)
        add(
          [k],
          t.path !== undefined
            ? `describes a built-in generator; a file (${name}.path) is used as it is`
            : 'describes a built-in generator; eval.holdout takes its share of the taskset',
        );
    if (name === 'taskset') {
      if (t.priority_floor !== 0.1 && t.selector !== 'priority')
        add(['priority_floor'], `read with taskset.selector priority only (selector ${t.selector} weighs no task)`);
      return;
    }
    t.pipeline?.forEach((s, k) => {
      if (s.name === 'synthesize')
        add(['pipeline', k], 'synthesize makes training tasks: it is read in taskset.pipeline only');
    });
    const whole = `only taskset.selector picks tasks; the ${name} set is used whole`;
    if (t.selector !== 'shuffle') add(['selector'], whole);
    if (t.priority_floor !== 0.1) add(['priority_floor'], whole);
  };
}

const tasksetRef = (name: 'taskset' | 'experts') =>
  tasksetObject
    .strict()
    .refine((t) => !!t.builtin !== !!t.path, { message: 'give exactly one of builtin or path' })
    .refine((t) => !t.builtin || (t.format === undefined && t.domain === undefined), {
      message: 'format and domain describe a file: use them with path',
      path: ['format'],
    })
    .superRefine(unreadByKind(name));

/**
 * The held-out eval set: a generator or a file as for the taskset, or `holdout`: that share of the
 * taskset's tasks (after taskset.pipeline), picked by `seed` (default 0, not the run's seed, so runs of
 * different seeds score on the same tasks) and never trained on. Without `eval`: a built-in taskset's
 * eval split; a taskset file of 20+ tasks holds out 10%, a smaller one runs with no eval set (no
 * held-out accuracy; the summary's eval_set says so): coordinator/setup/tasks.ts `loadTasks`.
 */
const evalRef = tasksetObject
  .extend({
    holdout: z
      .number()
      .gt(0)
      .lt(1)
      .optional()
      .describe(
        'The share of the taskset held out as the eval set (0 < holdout < 1), picked by seed; never trained on.',
      ),
  })
  .strict()
  .refine((t) => [t.builtin, t.path, t.holdout].filter((x) => x !== undefined).length === 1, {
    message: 'give exactly one of builtin, path or holdout',
  })
  .refine((t) => !t.builtin || (t.format === undefined && t.domain === undefined), {
    message: 'format and domain describe a file: use them with path',
    path: ['format'],
  })
  .refine((t) => t.holdout === undefined || (t.format === undefined && t.domain === undefined), {
    message: 'a held-out share is read as the taskset is (taskset.format, taskset.domain)',
    path: ['format'],
  })
  .superRefine(unreadByKind('eval'));

const algorithm = z
  .object({
    name: z.string().default('mix'),
    /** Parameters of the algorithm bundle (clip_range, mu, expert_ratio, kl_coef, ...). */
    params: z.record(z.unknown()).default({}),
  })
  .strict()
  .default({});

/** A learning rate: a positive number, or `auto` (set from each update's KL, trainer/adaptive-lr.ts). */
const LR_EXPECTED = "expected a positive number or 'auto'";
const lrField = z.union([z.number().positive({ message: LR_EXPECTED }), z.literal('auto')], {
  errorMap: () => ({ message: LR_EXPECTED }),
});

const stage = z
  .object({
    name: z.string(),
    algorithm: algorithm,
    /** Trainer steps in this stage. */
    steps: z.number().int().positive().optional(),
    /** Or a wall-clock budget for the stage. */
    wall_seconds: z.number().positive().optional(),
    mode: z.enum(['both', 'explore', 'train']).default('both'),
    /** The stage's own lr: a positive number, or `auto` (see trainer.lr). */
    lr: lrField.optional(),
    /** Learning-rate decay over the stage (default trainer.lr_decay); see trainer.lr_decay. */
    lr_decay: z.enum(['constant', 'cosine', 'linear']).optional(),
    min_lr_ratio: z.number().min(0).max(1).optional(),
    /** Trainer batch of this stage, expert rows included (default trainer.batch_size, which says what unset means). */
    batch_size: z.number().int().positive().optional(),
  })
  .strict()
  .refine((s) => s.steps !== undefined || s.wall_seconds !== undefined, {
    message: 'a stage needs steps or wall_seconds',
  });

const runConfigObject = z
  .object({
    name: z.string().default('run'),
    mode: z.enum(['both', 'explore', 'train', 'bench', 'serve']).default('both'),
    seed: z.number().int().default(0),
    model: z
      .object({
        size: z.string().default('tiny-0.4m'),
        checkpoint: z.string().optional(),
        /**
         * The chat template of a Hugging Face model that has several (tokenizer_config.json's list of
         * {name, template}, additional_chat_templates/NAME.jinja): its name, or a .jinja file (relative
         * to this config). Unset: the model's default template (chat_template.jinja or the one named 'default').
         */
        chat_template: z.string().min(1).optional(),
        // The RoPE tables and the KV cache are sized by it: 1e9 failed as an unnamed typed-array error.
        max_seq_len: z
          .number()
          .int()
          .positive()
          .max(MAX_SEQ_LEN, `at most ${MAX_SEQ_LEN} tokens (the position tables and the KV cache are sized by it)`)
          .optional(),
        /**
         * Image input (workflow `vision`): images are cut into patch_size x patch_size tiles, each
         * projected to the model width and placed before the prompt. Workflow `vision` gets it by
         * default (patch_size 4, max_patches from the taskset's largest image).
         */
        vision: z
          .object({
            patch_size: z.number().int().positive().default(4),
            max_patches: z.number().int().positive().optional(),
          })
          .strict()
          .optional(),
        /** LoRA adapters instead of full fine-tuning: only the adapters train (backend/model/lora.ts). */
        lora: LoraConfigSchema.optional(),
      })
      .strict()
      // A checkpoint's own config sets its size (a size beside it would be ignored).
      .refine((m) => m.checkpoint === undefined || m.size === 'tiny-0.4m', {
        message: "not read with model.checkpoint (the checkpoint's config sets the size)",
        path: ['size'],
      })
      .default({}),
    tokenizer: z
      .object({
        kind: z.enum(['char', 'bpe']).default('char'),
        path: z.string().optional(),
        vocab_size: z.number().int().positive().optional(),
      })
      .strict()
      // A tokenizer file is the tokenizer; a char tokenizer has one token per character.
      .superRefine((t, ctx) => {
        const add = (k: string, message: string) => ctx.addIssue({ code: 'custom', path: [k], message });
        if (t.path !== undefined) {
          if (t.kind !== 'char') add('kind', 'not read with tokenizer.path (the file is the tokenizer)');
          if (t.vocab_size !== undefined) add('vocab_size', 'not read with tokenizer.path (the file is the tokenizer)');
        } else if (t.vocab_size !== undefined && t.kind !== 'bpe')
          add('vocab_size', 'read for kind bpe only (a char tokenizer has one token per character)');
      })
      .default({}),
    taskset: tasksetRef('taskset'),
    /** mode serve: the OpenAI-compatible endpoint (config-serve.ts). */
    serve: serveSection.optional(),
    eval: evalRef.optional(),
    /** Expert demonstrations: a built-in generator's solutions or a file of {prompt, response}. */
    experts: tasksetRef('experts').optional(),
    workflow: z
      // reward: the default reward function; a task's own `reward` field (format.reward_key) wins.
      // file: workspace code (.js/.mjs/.ts, relative to the config) whose default export registers
      // rewards / workflows by name (explorer/custom.ts); loaded only in a run started with trust.
      // code_timeout_seconds: the longest one call into the file's code (a reward, a workflow, an
      // environment step) may run, time waiting on the model excluded; past it the call is an
      // infra failure and a thread that stopped answering is stopped (explorer/user-code/host.ts). Default 60.
      .object({
        name: z.string().default('single_turn'),
        reward: z.string().optional(),
        file: z.string().min(1).optional(),
        code_timeout_seconds: z.number().positive().max(86_400).optional(),
      })
      .strict()
      .refine((w) => w.code_timeout_seconds === undefined || w.file !== undefined, {
        message: 'bounds the code of workflow.file: set file, or leave it out',
        path: ['code_timeout_seconds'],
      }),
    algorithm,
    buffer: z
      .object({
        storage: z.string().default('sqlite'),
        max_staleness: z.number().int().min(0).default(1),
        /** How the trainer reads rollouts (fifo, fresh, priority). Default: fresh (the newest rows within max_staleness first) with synchronizer.schedule async, fifo otherwise. */
        sampler: z.string().optional(),
        /**
         * Train on another run's rollouts (mode train, or the stages with mode train): its buffer.db (a
         * SQLite file), a PostgreSQL URL or a JSONL export (`rft buffer export`). Copied into this run's
         * buffer at its start (ids and groups prefixed with the source run, so runs sharing a database
         * stay apart); the trainer then reads them without the version bound of exploring stages, and a
         * stage that has no whole batch left says so and ends instead of waiting for rows nobody writes.
         */
        train_from: z
          .object({
            path: z.string().min(1),
            /** Only this run's rows (a database shared by runs); default: every run's there. */
            run: z.string().min(1).optional(),
            /** The version bound: rollouts sampled by model versions >= min_version of the source run (expert rows always). */
            min_version: z.number().int().min(0).default(0),
          })
          .strict()
          .optional(),
      })
      .strict()
      .default({}),
    explorer: z
      .object({
        workers: z.number().int().positive().default(1),
        /**
         * What samples rollouts: this project's decode, llama.cpp on a GGUF export of each synced version, or
         * auto: per batch, whichever of the two this process measured faster at that batch size (each
         * experience records the engine and why in metadata.rollout_engine / rollout_engine_reason).
         */
        engine: z.enum(['native', 'llama-cpp', 'auto']).default('native'),
        /**
         * Where llama.cpp samples (engine llama-cpp or auto): auto takes the first of node-llama-cpp's
         * prebuilt GPU builds that finds a device (CUDA, Vulkan, Metal), else the CPU; off is the CPU;
         * a named backend that cannot start is an error at the first sync.
         */
        llama_cpp_gpu: z.enum(['auto', 'off', 'cuda', 'vulkan', 'metal']).default('auto'),
        tasks_per_step: z.number().int().positive().default(8),
        repeat_times: z.number().int().positive().default(8),
        sampling,
        eval_sampling: evalSampling,
        /**
         * Partial rollouts (Kimi k1.5): a trajectory gets at most max_tokens_per_step new tokens per explore
         * step; a longer one is stored unfinished (status partial) and continued in later steps with their
         * weights. loss_segments: all of a finished trajectory's tokens count in the loss, or (fresh) only
         * those sampled within buffer.max_staleness versions of the trainer's.
         */
        partial_rollout: z
          .object({
            max_tokens_per_step: z.number().int().positive(),
            loss_segments: z.enum(['all', 'fresh']).default('all'),
          })
          .strict()
          .optional(),
        /** An OpenAI-compatible chat endpoint as the rollout model (modes `explore` and `bench`). */
        endpoint: z
          .object({
            base_url: z.string().url(),
            model: z.string(),
            /** Name of the environment variable that holds the API key (never the key itself). */
            api_key_env: z.string().optional(),
            concurrency: z.number().int().positive().default(4),
            timeout_ms: z.number().int().positive().default(60_000),
          })
          .strict()
          .optional(),
      })
      .strict()
      // What the engine does not read: llama.cpp's device with this project's decode; rollout threads
      // with one llama.cpp context (auto reads workers: its native side runs on them).
      .superRefine((e, ctx) => {
        if (e.llama_cpp_gpu !== 'auto' && e.engine === 'native')
          ctx.addIssue({
            code: 'custom',
            path: ['llama_cpp_gpu'],
            message:
              "read with explorer.engine llama-cpp or auto only (engine native samples with this project's decode)",
          });
        if (e.engine === 'llama-cpp' && e.workers !== 1)
          ctx.addIssue({
            code: 'custom',
            path: ['workers'],
            message: 'not read with explorer.engine llama-cpp (one llama.cpp context samples every sequence)',
          });
      })
      .default({}),
    trainer: z
      .object({
        /**
         * Rows of each trainer step, expert rows included (a stage's batch_size overrides it). Unset: a
         * stage that explores trains one explore step's rollouts (tasks_per_step x repeat_times, plus
         * MIX's expert share); a stage that trains on the buffer alone takes 64. Given for an exploring
         * stage, it is honoured: short steps are explored again until the batch is full; a batch whose
         * rollout share is less than one explore step is refused.
         */
        batch_size: z.number().int().positive().optional(),
        /** Rows per micro-batch (gradients accumulate over the batch); 0 = the whole batch at once. Unset: the trainer sizes it from the model and the wasm heap, and logs its choice. */
        micro_batch_size: z.number().int().min(0).optional(),
        /**
         * A positive number, or `auto`: the lr is moved every step to keep the policy change of each
         * update (its KL per token) in a band (trainer/adaptive-lr.ts). Unset: 1e-3 for a built-in size
         * trained from scratch; `auto` from model.checkpoint, full or LoRA (core/trainer-defaults.ts; the
         * run's log says which).
         */
        lr: lrField.optional(),
        /**
         * `lr: auto`'s controller (unset fields: core/trainer-defaults.ts): the update KL per token it
         * keeps each step near (band [target_kl/2, 2 target_kl]), its first lr and its bounds.
         */
        lr_auto: z
          .object({
            target_kl: z.number().positive().optional(),
            start: z.number().positive().optional(),
            min: z.number().positive().optional(),
            max: z.number().positive().optional(),
          })
          .strict()
          .refine((a) => a.min === undefined || a.max === undefined || a.min <= a.max, {
            message: 'min must not be above max',
            path: ['min'],
          })
          .optional(),
        /**
         * Steps of linear warm-up. Unset: 0 from scratch and with lr auto, 5 for a fixed lr from
         * model.checkpoint. With lr auto, the warm-up (and lr_decay) shape the update KL it aims at.
         */
        warmup_steps: z.number().int().min(0).optional(),
        /** Decay over each stage's progress: its steps done, or its wall-clock budget used (whichever is further). */
        lr_decay: z.enum(['constant', 'cosine', 'linear']).default('constant'),
        /** The decayed learning rate ends at min_lr_ratio * lr. */
        min_lr_ratio: z.number().min(0).max(1).default(0.1),
        weight_decay: z.number().min(0).default(0),
        /** Global gradient-norm clip (1 by default, from scratch and from a checkpoint). */
        grad_clip: z.number().positive().optional(),
        steps: z.number().int().positive().default(100),
      })
      .strict()
      .default({}),
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
    stages: z.array(stage).optional(),
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
