// The run config's taskset references (core/config.ts puts the sections together): the training
// taskset and the experts (a built-in generator or a file), the eval set (either, or a held-out share
// of the taskset), and what each kind of reference does not read.
import { z } from 'zod';

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

export const tasksetRef = (name: 'taskset' | 'experts') =>
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
export const evalRef = tasksetObject
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
