// The result a reward function returns when the task, not the response, is at fault.
import type { RewardResult } from '../workflow.js';

/** The task lacks what the reward needs: not the model's fault, so never trained on. */
export function badTask(reason: string): RewardResult {
  return { reward: 0, status: 'infra_failure', reason: `task cannot be scored: ${reason}` };
}
