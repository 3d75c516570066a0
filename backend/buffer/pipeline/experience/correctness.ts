// When a sample counts as correct, for the length reward and long2short: the reward function's own
// `correct` detail when it reports one (math_answer, countdown, k12 do), else the unshaped reward
// (rewardDetails.raw_reward when reward_shaping ran before) at or above a threshold.
import { z } from 'zod';
import type { Experience } from '../../../core/types.js';

/** Parameter shared by the operators that need correctness. */
export const correctThreshold = z.number().default(1);

export function isCorrect(e: Experience, threshold: number): boolean {
  const c = e.rewardDetails?.correct;
  if (typeof c === 'boolean') return c;
  if (typeof c === 'number') return c > 0;
  const raw = e.rewardDetails?.raw_reward;
  return (typeof raw === 'number' ? raw : e.reward) >= threshold;
}

/** Tokens the model produced (environment tokens of multi-turn rollouts excluded). */
export function generatedLength(e: Experience): number {
  let n = 0;
  for (const m of e.actionMask) n += m;
  return n;
}

/** Valid rollout groups (usual, status ok) by group id, in first-seen order. */
export function rolloutGroups(exps: Experience[]): Experience[][] {
  const groups = new Map<string, Experience[]>();
  for (const e of exps)
    if (e.status === 'ok' && e.source === 'usual')
      (groups.get(e.groupId) ?? groups.set(e.groupId, []).get(e.groupId)!).push(e);
  return [...groups.values()];
}
