// Difficulty from observed pass rates: difficulty = 1 - passes / attempts (tasks with fewer than
// min_attempts keep their own difficulty, or get `prior`). Counts are kept in metadata.
import { z } from 'zod';
import type { OperatorSpec } from './operator-spec.js';
import type { TaskOperator, TaskPipelineDeps } from './types.js';

const params = z
  .object({ min_attempts: z.number().int().positive().default(1), prior: z.number().min(0).max(1).optional() })
  .strict();
type Params = z.infer<typeof params>;

export const difficulty: OperatorSpec<TaskOperator, TaskPipelineDeps> = {
  summary: 'score difficulty = 1 - pass rate from earlier rollouts',
  params,
  create: (p: Params) => ({
    apply: (tasks, ctx) =>
      tasks.map((t) => {
        const c = ctx.passRates?.get(t.id);
        if (!c || c.attempts < p.min_attempts)
          return p.prior !== undefined && t.difficulty === undefined ? { ...t, difficulty: p.prior } : t;
        const passRate = c.passes / c.attempts;
        return {
          ...t,
          difficulty: 1 - passRate,
          metadata: { ...t.metadata, passRate, passes: c.passes, attempts: c.attempts },
        };
      }),
  }),
};
