// Priority weight per task from its difficulty: max(min_weight, difficulty ^ power), in metadata.priority.
// With difficulty = 1 - pass rate this is the Kimi k1.5 weighting (power 1).
import { z } from 'zod';
import type { OperatorSpec } from './operator-spec.js';
import type { TaskOperator, TaskPipelineDeps } from './types.js';

const params = z
  .object({
    power: z.number().positive().default(1),
    min_weight: z.number().min(0).default(0),
    /** Difficulty assumed for tasks without one. */
    prior: z.number().min(0).max(1).default(0.5),
  })
  .strict();
type Params = z.infer<typeof params>;

export const priorityWeights: OperatorSpec<TaskOperator, TaskPipelineDeps> = {
  summary: 'metadata.priority = max(min_weight, difficulty ^ power)',
  params,
  create: (p: Params) => ({
    apply: (tasks) =>
      tasks.map((t) => ({
        ...t,
        metadata: { ...t.metadata, priority: Math.max(p.min_weight, Math.pow(t.difficulty ?? p.prior, p.power)) },
      })),
  }),
};
