// The warning of an explore step that gives up refilling (explorer/filling-explorer.ts): rounds in a
// row in which the experience pipeline kept no trainable row. Says what happened to the samples of
// those rounds and what to try, with the numbers as `values` (a run warning, core/protocol.ts).
import type { ExploreMetrics } from './explorer.js';

export interface NoTrainableStep {
  step: number;
  rounds: number;
  message: string;
  values: Record<string, number>;
}

/** `m`: the summed metrics of the `rounds` rounds in a row that added no trainable row. */
export function noTrainableStep(step: number, rounds: number, m: ExploreMetrics): NoTrainableStep {
  const dropped = m.ok; // scored, but none reached the buffer as a trainable row
  const why: string[] = [];
  if (dropped)
    why.push(
      `${dropped} scored sample(s) (mean reward ${m.reward_mean.toFixed(3)}) were all dropped by the experience pipeline (e.g. reward_filter drop_zero_variance drops every group whose rewards are all equal)`,
    );
  if (m.invalid) why.push(`${m.invalid} sample(s) were invalid`);
  if (m.infra_failure) why.push(`${m.infra_failure} sample(s) were infra failures`);
  return {
    step,
    rounds,
    message:
      `explore step ${step}: ${rounds} refill rounds in a row made no trainable rollout (of ${m.experiences} sample(s): ${why.join('; ') || 'none kept'}); ` +
      'the policy may have collapsed or the reward gives no spread over a group; the run stops here. ' +
      'Try a lower lr, a larger repeat_times or temperature, a reward with partial credit, or resume from an earlier checkpoint',
    values: {
      rounds,
      samples: m.experiences,
      dropped,
      invalid: m.invalid,
      infra_failure: m.infra_failure,
      reward_mean: m.reward_mean,
    },
  };
}
