// Kimi k1.5's length reward (group-relative): within a group of samples of one task,
// lambda = 0.5 - (len - min_len) / (max_len - min_len) (0 when all lengths are equal); a correct
// sample gets lambda, an incorrect one min(0, lambda): short right answers are favoured and long wrong
// ones penalised, never a wrong answer rewarded for being short. Added to the reward times `weight`,
// ramped linearly from 0 over `warmup_steps` trainer steps, counted by the version of the weights that
// sampled the group (= trainer steps done, earlier stages included), so it means the same in every
// placement. The default warm-up (100 steps) is there because at full weight from step 0 the
// length term dominates while few answers are correct (every wrong long answer is penalised, no
// wrong short one is), and a policy shrank its answers to one character within 40 steps; 0 applies
// the full weight at once.
// Must come before `advantage`. The unshaped reward stays in rewardDetails.raw_reward.
import { z } from 'zod';
import type { OperatorSpec } from '../task/operator-spec.js';
import { correctThreshold, generatedLength, isCorrect, rolloutGroups } from './correctness.js';
import type { ExperienceOperator, ExperiencePipelineDeps } from './types.js';

/** Default warm-up of the length reward, in trainer steps (see the header). */
export const LENGTH_REWARD_WARMUP = 100;

const params = z
  .object({
    weight: z.number().min(0).default(1),
    warmup_steps: z.number().int().min(0).default(LENGTH_REWARD_WARMUP),
    correct_threshold: correctThreshold,
  })
  .strict();
type Params = z.infer<typeof params>;

/** The lambdas of one group's lengths and correctness, before weight and warmup. */
export function lengthLambdas(lengths: number[], correct: boolean[]): number[] {
  const min = Math.min(...lengths);
  const max = Math.max(...lengths);
  return lengths.map((len, i) => {
    const lambda = max === min ? 0 : 0.5 - (len - min) / (max - min);
    return correct[i] ? lambda : Math.min(0, lambda);
  });
}

/** Share of the weight at a sampling version: linear 0 -> 1 over warmup_steps. */
export function warmupFactor(version: number, warmupSteps: number): number {
  if (warmupSteps === 0) return 1;
  return Math.min(1, Math.max(0, version) / warmupSteps);
}

export const lengthReward: OperatorSpec<ExperienceOperator, ExperiencePipelineDeps> = {
  summary: 'Kimi k1.5 group-relative length reward (weight, warmup_steps over trainer steps, default 100)',
  params,
  create: (p: Params) => ({
    apply(exps, ctx) {
      for (const g of rolloutGroups(exps)) {
        const lambdas = lengthLambdas(
          g.map(generatedLength),
          g.map((e) => isCorrect(e, p.correct_threshold)),
        );
        g.forEach((e, i) => {
          const add = p.weight * warmupFactor(e.modelVersion, p.warmup_steps) * lambdas[i]!;
          if (add === 0) return;
          const raw = e.rewardDetails?.raw_reward ?? e.reward;
          e.rewardDetails = { ...e.rewardDetails, raw_reward: raw, length_reward: add };
          e.reward += add;
          ctx.count('length_reward');
        });
      }
      return exps;
    },
  }),
};
