// Keep tasks that have the required fields and whose text field matches a pattern.
import { z } from 'zod';
import type { Task } from '../../../core/types.js';
import type { OperatorSpec } from './operator-spec.js';
import type { TaskOperator, TaskPipelineDeps } from './types.js';

const params = z
  .object({
    required_fields: z.array(z.string()).default([]),
    pattern: z.string().optional(),
    flags: z.string().default(''),
    /** Field the pattern is matched against: a task field or `metadata.KEY`. */
    field: z.string().default('prompt'),
    /** Drop matching tasks instead of keeping them. */
    exclude: z.boolean().default(false),
  })
  .strict()
  .superRefine((p, ctx) => {
    if (p.pattern === undefined) return;
    try {
      new RegExp(p.pattern, p.flags);
    } catch (e) {
      ctx.addIssue({ code: 'custom', path: ['pattern'], message: `bad regular expression: ${(e as Error).message}` });
    }
  });
type Params = z.infer<typeof params>;

function fieldOf(t: Task, path: string): unknown {
  if (path.startsWith('metadata.')) return t.metadata?.[path.slice('metadata.'.length)];
  return (t as unknown as Record<string, unknown>)[path];
}

const present = (v: unknown) => v !== undefined && v !== null && v !== '' && !(Array.isArray(v) && v.length === 0);

export const formatFilter: OperatorSpec<TaskOperator, TaskPipelineDeps> = {
  summary: 'keep tasks with the required fields and a field matching a regex',
  params,
  create: (p: Params) => {
    const re = p.pattern === undefined ? undefined : new RegExp(p.pattern, p.flags);
    return {
      apply: (tasks) =>
        tasks.filter((t) => {
          if (!p.required_fields.every((f) => present(fieldOf(t, f)))) return false;
          if (!re) return true;
          const v = fieldOf(t, p.field);
          const hit = typeof v === 'string' && re.test(v);
          return p.exclude ? !hit : hit;
        }),
    };
  },
};
