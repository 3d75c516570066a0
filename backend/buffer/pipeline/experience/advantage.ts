// Advantages computed in the pipeline (as the reference framework does), by a function the caller
// injects (the coordinator passes the trainer's GRPO group advantage; the buffer never imports the trainer).
import { z } from 'zod';
import type { OperatorSpec } from '../task/operator-spec.js';
import type { ExperienceOperator, ExperiencePipelineDeps } from './types.js';

const params = z
  .object({
    sources: z
      .array(z.enum(['usual', 'expert']))
      .min(1)
      .default(['usual']),
  })
  .strict();
type Params = z.infer<typeof params>;

export const advantage: OperatorSpec<ExperienceOperator, ExperiencePipelineDeps> = {
  summary: "per-token advantages of valid experiences by the caller's advantage function",
  params,
  create: (p: Params, deps) => {
    const fn = deps.advantage;
    if (!fn)
      throw new Error(
        "advantage: the pipeline was given no advantage function (the caller injects one, e.g. the trainer's GRPO)",
      );
    return {
      apply(exps, ctx) {
        const sel = exps.filter((e) => e.status === 'ok' && p.sources.includes(e.source));
        if (sel.length === 0) return exps;
        if (fn(sel) === false) return exps;
        for (const e of sel) {
          if (
            !e.advantages ||
            e.advantages.length !== e.responseTokens.length ||
            e.advantages.some((a) => !Number.isFinite(a))
          ) {
            throw new Error(
              `advantage function left experience '${e.id}' without ${e.responseTokens.length} finite advantages`,
            );
          }
        }
        ctx.count('advantage', sel.length);
        return exps;
      },
    };
  },
};
