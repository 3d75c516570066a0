// Validity checks: a response that is there, token / mask / log-prob arrays of one length, finite
// log-probs (<= 0) and reward. A failing experience becomes status 'invalid' with the reason.
import { z } from 'zod';
import type { Experience } from '../../../core/types.js';
import type { OperatorSpec } from '../task/operator-spec.js';
import type { ExperienceOperator, ExperiencePipelineDeps } from './types.js';

const params = z
  .object({ allow_empty_response: z.boolean().default(false), logprob_tolerance: z.number().min(0).default(1e-4) })
  .strict();
type Params = z.infer<typeof params>;

export function invalidReason(e: Experience, p: Params): string | undefined {
  const n = e.responseTokens.length;
  if (!p.allow_empty_response && (n === 0 || e.responseText.trim() === '')) return 'empty_response';
  if (e.actionMask.length !== n) return 'mask_length';
  if (e.actionMask.some((m) => m !== 0 && m !== 1)) return 'mask_values';
  // Hand-written data (modelVersion -1) may have no log-probs; generated data must.
  if (e.logprobs.length === 0 ? e.modelVersion >= 0 : e.logprobs.length !== n) return 'logprobs_length';
  if (e.logprobs.some((l) => !Number.isFinite(l))) return 'nonfinite_logprob';
  if (e.logprobs.some((l) => l > p.logprob_tolerance)) return 'positive_logprob';
  if (!Number.isFinite(e.reward)) return 'nonfinite_reward';
  return undefined;
}

export const validity: OperatorSpec<ExperienceOperator, ExperiencePipelineDeps> = {
  summary: 'mark experiences with empty responses or inconsistent tokens / mask / log-probs invalid',
  params,
  create: (p: Params) => ({
    apply(exps, ctx) {
      for (const e of exps) {
        if (e.status !== 'ok') continue;
        const why = invalidReason(e, p);
        if (why) {
          e.status = 'invalid';
          e.statusReason = why;
          ctx.count(`invalid:${why}`);
        }
      }
      return exps;
    },
  }),
};
