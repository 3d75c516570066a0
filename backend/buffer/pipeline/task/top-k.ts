// Keep the k tasks with the highest priority (or difficulty), highest first; ties keep file order.
import { z } from 'zod';
import type { Task } from '../../../core/types.js';
import type { OperatorSpec } from './operator-spec.js';
import type { TaskOperator, TaskPipelineDeps } from './types.js';

const params = z
  .object({ k: z.number().int().positive(), by: z.enum(['priority', 'difficulty']).default('priority') })
  .strict();
type Params = z.infer<typeof params>;

const keyOf = (t: Task, by: Params['by']): number => {
  const v = by === 'priority' ? t.metadata?.priority : t.difficulty;
  return typeof v === 'number' ? v : -Infinity;
};

export const topK: OperatorSpec<TaskOperator, TaskPipelineDeps> = {
  summary: 'keep the k tasks with the highest priority or difficulty',
  params,
  create: (p: Params) => ({
    apply: (tasks) =>
      tasks
        .map((t, i) => ({ t, i, v: keyOf(t, p.by) }))
        .sort((a, b) => b.v - a.v || a.i - b.i)
        .slice(0, p.k)
        .map((x) => x.t),
  }),
};
