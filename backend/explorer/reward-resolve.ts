// Reward names as configs write them: a registered reward function (`math_answer`), a factory with
// an argument (`reward_model:<checkpoint dir>`), or `environment` (multi-turn tasks, whose reward
// the environment gives). Factories are the map below; adding one is one entry.
import { Registry } from '../core/registry.js';
import type { RewardFn } from './workflow.js';
import { rewardFns } from './rewards/index.js';
import { loadRewardModel } from './reward-model/reward.js';

export const rewardFactories = new Registry<(arg: string) => RewardFn>('reward factory', {
  reward_model: loadRewardModel,
});

/** The environment reward: only the multi_turn workflow gives it; scoring a single answer with it is a setup error. */
const environmentReward: RewardFn = async () => ({
  reward: 0,
  status: 'infra_failure',
  reason: "the 'environment' reward is given by the environment in the multi_turn workflow",
});

const cache = new Map<string, RewardFn>();

export function resolveReward(name: string): RewardFn {
  if (name === 'environment') return environmentReward;
  const colon = name.indexOf(':');
  if (colon < 0) return rewardFns.get(name);
  const hit = cache.get(name);
  if (hit) return hit;
  const fn = rewardFactories.get(name.slice(0, colon))(name.slice(colon + 1));
  cache.set(name, fn);
  return fn;
}
