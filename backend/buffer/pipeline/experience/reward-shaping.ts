// Reward shaping on valid experiences: format bonus, length penalty, scale / offset, clip.
// The unshaped reward is kept in rewardDetails.raw_reward.
import { z } from 'zod';
import type { OperatorSpec } from '../task/operator-spec.js';
import type { ExperienceOperator, ExperiencePipelineDeps } from './types.js';

const params = z
  .object({
    format_bonus: z
      .object({ pattern: z.string(), flags: z.string().default(''), bonus: z.number() })
      .strict()
      .refine(
        (f) => {
          try {
            new RegExp(f.pattern, f.flags);
            return true;
          } catch {
            return false;
          }
        },
        { message: 'bad regular expression', path: ['pattern'] },
      )
      .optional(),
    /** Penalty coef x (response tokens beyond target_tokens), at most max_penalty. */
    length_penalty: z
      .object({
        target_tokens: z.number().int().min(0),
        coef: z.number().min(0),
        max_penalty: z.number().min(0).default(Infinity),
      })
      .strict()
      .optional(),
    scale: z.number().default(1),
    offset: z.number().default(0),
    clip: z.object({ min: z.number().optional(), max: z.number().optional() }).strict().optional(),
  })
  .strict();
type Params = z.infer<typeof params>;

export const rewardShaping: OperatorSpec<ExperienceOperator, ExperiencePipelineDeps> = {
  summary: 'format bonus, length penalty, scale / offset and clip of rewards',
  params,
  create: (p: Params) => {
    const re = p.format_bonus ? new RegExp(p.format_bonus.pattern, p.format_bonus.flags) : undefined;
    return {
      apply(exps, ctx) {
        for (const e of exps) {
          if (e.status !== 'ok') continue;
          const raw = e.reward;
          let r = raw;
          const details: Record<string, number> = {};
          if (re?.test(e.responseText)) {
            r += p.format_bonus!.bonus;
            details.format_bonus = p.format_bonus!.bonus;
          }
          if (p.length_penalty) {
            const over = Math.max(0, e.responseTokens.length - p.length_penalty.target_tokens);
            const pen = Math.min(p.length_penalty.max_penalty, p.length_penalty.coef * over);
            r -= pen;
            if (pen > 0) details.length_penalty = pen;
          }
          r = r * p.scale + p.offset;
          if (p.clip?.min !== undefined) r = Math.max(p.clip.min, r);
          if (p.clip?.max !== undefined) r = Math.min(p.clip.max, r);
          if (r !== raw) {
            e.rewardDetails = { raw_reward: raw, ...e.rewardDetails, ...details };
            e.reward = r;
            ctx.count('shaped');
          }
        }
        return exps;
      },
    };
  },
};
