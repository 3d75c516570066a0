// REINFORCE++: discounted returns over every position (the mask does not reset the sum), whitened
// over the batch's unmasked tokens, then masked. Returns stay unmasked.
// Params: gamma (1.0).
import { resolveParams } from '../params.js';
import { defineAdvantage } from './define.js';
import type { AdvantageFn, AdvantageInput, AdvantageResult } from './types.js';
import { discountedReturns, requireInputs, whiten } from './util.js';

export interface ReinforcePpParams {
  gamma: number;
}

export const reinforcePpAdvantage: AdvantageFn<ReinforcePpParams> = defineAdvantage({
  name: 'reinforce++',
  description: 'whitened discounted returns (REINFORCE++)',
  defaults: { gamma: 1.0 },
  requires: ['tokenLevelRewards'],
  where: 'pipeline',
  compute(input: AdvantageInput, given?: Partial<ReinforcePpParams>): AdvantageResult {
    const p = resolveParams('advantage', 'reinforce++', reinforcePpAdvantage.defaults, given);
    requireInputs('reinforce++', input, reinforcePpAdvantage.requires);
    const mask = input.actionMask;
    const returns = discountedReturns(input.tokenLevelRewards!, p.gamma);
    const white = whiten(returns, mask, 'reinforce++');
    const advantages = white.map((row, b) => row.map((v, t) => (mask[b]![t] ? v * mask[b]![t]! : 0)));
    return { advantages, returns, metrics: {} };
  },
});
