// Reward filters: drop invalid experiences, and optionally whole GRPO groups whose rewards are all
// equal (zero variance: every advantage would be 0, so they only dilute the batch).
import { z } from 'zod';
import type { Experience } from '../../../core/types.js';
import type { OperatorSpec } from '../task/operator-spec.js';
import type { ExperienceOperator, ExperiencePipelineDeps } from './types.js';

const params = z
  .object({
    drop_invalid: z.boolean().default(true),
    drop_zero_variance: z.boolean().default(false),
    /** Rewards within this standard deviation count as equal. */
    eps: z.number().min(0).default(1e-6),
  })
  .strict();
type Params = z.infer<typeof params>;

export function std(xs: number[]): number {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - m) * (b - m), 0) / xs.length);
}

export const rewardFilter: OperatorSpec<ExperienceOperator, ExperiencePipelineDeps> = {
  summary: 'drop invalid experiences and (optionally) zero-variance groups',
  params,
  create: (p: Params) => ({
    apply(exps, ctx) {
      let out = exps;
      if (p.drop_invalid) {
        out = out.filter((e) => (e.status === 'invalid' ? (ctx.drop(e, 'invalid'), false) : true));
      }
      if (p.drop_zero_variance) {
        // Only rollout groups: expert data is not a GRPO group.
        const groups = new Map<string, Experience[]>();
        for (const e of out)
          if (e.status === 'ok' && e.source === 'usual')
            (groups.get(e.groupId) ?? groups.set(e.groupId, []).get(e.groupId)!).push(e);
        const flat = new Set<Experience>();
        for (const g of groups.values()) if (std(g.map((e) => e.reward)) <= p.eps) for (const e of g) flat.add(e);
        out = out.filter((e) => (flat.has(e) ? (ctx.drop(e, 'zero_variance'), false) : true));
      }
      return out;
    },
  }),
};
