// Keep tasks whose prompt length is within bounds, in characters or (given a tokenizer) tokens.
import { InputError } from '../../../core/errors.js';
import { z } from 'zod';
import type { OperatorSpec } from './operator-spec.js';
import { taskText } from './text.js';
import type { TaskOperator, TaskPipelineDeps } from './types.js';

const n = z.number().int().min(0).optional();
const params = z
  .object({ min_chars: n, max_chars: n, min_tokens: n, max_tokens: n })
  .strict()
  .refine((p) => Object.values(p).some((v) => v !== undefined), {
    message: 'give at least one of min_chars, max_chars, min_tokens, max_tokens',
  });
type Params = z.infer<typeof params>;

export const lengthFilter: OperatorSpec<TaskOperator, TaskPipelineDeps> = {
  summary: 'keep prompts within min/max characters or tokens',
  params,
  create: (p: Params, deps) => {
    const byTokens = p.min_tokens !== undefined || p.max_tokens !== undefined;
    if (byTokens && !deps.countTokens)
      throw new InputError('length_filter: min_tokens / max_tokens need a tokenizer (none was given to the pipeline)');
    const within = (v: number, lo = 0, hi = Infinity) => v >= lo && v <= hi;
    return {
      apply: (tasks) =>
        tasks.filter((t) => {
          const s = taskText(t);
          if (!within(s.length, p.min_chars, p.max_chars)) return false;
          return !byTokens || within(deps.countTokens!(s), p.min_tokens, p.max_tokens);
        }),
    };
  },
};
