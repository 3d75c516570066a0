// RLOO: score = r_i minus the mean of the other rewards of its group (r_i itself for a group of one).
// Params: none.
import { resolveParams } from '../params.js';
import { defineAdvantage } from './define.js';
import type { AdvantageFn, AdvantageInput, AdvantageResult } from './types.js';
import { broadcastScores, groupRows, mean, requireInputs } from './util.js';

export type RlooParams = Record<string, never>;

export const rlooAdvantage: AdvantageFn<RlooParams> = defineAdvantage({
  name: 'rloo',
  description: 'leave-one-out baseline (RLOO)',
  defaults: {},
  requires: ['rewards', 'groupIds'],
  where: 'pipeline',
  compute(input: AdvantageInput, given?: Partial<RlooParams>): AdvantageResult {
    resolveParams('advantage', 'rloo', rlooAdvantage.defaults, given);
    requireInputs('rloo', input, rlooAdvantage.requires);
    const rewards = input.rewards!;
    const scores = new Array<number>(rewards.length);
    for (const rows of groupRows(input.groupIds!).values()) {
      const k = rows.length;
      if (k === 1) {
        scores[rows[0]!] = rewards[rows[0]!]!;
        continue;
      }
      const mu = mean(rows.map((i) => rewards[i]!));
      // Same arithmetic as the reference: r·k/(k-1) - mean·k/(k-1).
      for (const i of rows) scores[i] = (rewards[i]! * k) / (k - 1) - (mu * k) / (k - 1);
    }
    const advantages = broadcastScores(scores, input.actionMask);
    return { advantages, returns: advantages.map((r) => r.slice()), scores, metrics: {} };
  },
});
