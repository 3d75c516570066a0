// The reward-function registry: name -> (task, responseText, ctx) => RewardResult. Each reward
// function is one file that registers itself; adding one is that file plus its import in index.ts.
import { Registry } from '../../core/registry.js';
import type { RewardFn, RewardResult } from '../workflow.js';

export const rewardFns = new Registry<RewardFn>('reward function');

/** The task lacks what the reward needs: not the model's fault, so never trained on. */
export function badTask(reason: string): RewardResult {
  return { reward: 0, status: 'infra_failure', reason: `task cannot be scored: ${reason}` };
}
