// OPMD (Kimi k1.5 style): score = r - b_G with b_G the group mean ('mean') or
// tau·(log Σ exp(r/tau) - log k) ('logavgexp'); a group of one has baseline 0.
// Params: opmdBaseline ('mean' | 'logavgexp'), tau (1.0, logavgexp only).
import { InputError } from '../../../core/errors.js';
import { resolveParams } from '../params.js';
import { defineAdvantage } from './define.js';
import type { AdvantageFn, AdvantageInput, AdvantageResult } from './types.js';
import { broadcastScores, groupRows, mean, requireInputs } from './util.js';

export interface OpmdAdvantageParams {
  opmdBaseline: 'mean' | 'logavgexp';
  tau: number;
}

function logAvgExp(rs: number[], tau: number): number {
  const zs = rs.map((r) => r / tau);
  const m = Math.max(...zs);
  let s = 0;
  for (const z of zs) s += Math.exp(z - m);
  return tau * (m + Math.log(s) - Math.log(rs.length));
}

export const opmdAdvantage: AdvantageFn<OpmdAdvantageParams> = defineAdvantage({
  name: 'opmd',
  description: 'reward minus a group baseline (OPMD, Kimi k1.5)',
  defaults: { opmdBaseline: 'mean', tau: 1.0 },
  requires: ['rewards', 'groupIds'],
  where: 'pipeline',
  compute(input: AdvantageInput, given?: Partial<OpmdAdvantageParams>): AdvantageResult {
    const p = resolveParams('advantage', 'opmd', opmdAdvantage.defaults, given);
    if (p.opmdBaseline !== 'mean' && p.opmdBaseline !== 'logavgexp') {
      throw new InputError(`advantage 'opmd': opmdBaseline must be 'mean' or 'logavgexp', got '${p.opmdBaseline}'`);
    }
    if (p.opmdBaseline === 'logavgexp' && !(p.tau > 0))
      throw new InputError(`advantage 'opmd': tau must be > 0, got ${p.tau}`);
    requireInputs('opmd', input, opmdAdvantage.requires);
    const rewards = input.rewards!;
    const scores = new Array<number>(rewards.length);
    const baseline: Record<string, number> = {};
    const groupMean: Record<string, number> = {};
    for (const [gid, rows] of groupRows(input.groupIds!)) {
      const rs = rows.map((i) => rewards[i]!);
      groupMean[gid] = mean(rs);
      const b = rs.length === 1 ? 0 : p.opmdBaseline === 'mean' ? groupMean[gid]! : logAvgExp(rs, p.tau);
      baseline[gid] = b;
      for (const i of rows) scores[i] = rewards[i]! - b;
    }
    const advantages = broadcastScores(scores, input.actionMask);
    return {
      advantages,
      returns: advantages.map((r) => r.slice()),
      scores,
      groupStats: { group_baseline: baseline, group_reward_mean: groupMean },
      metrics: {},
    };
  },
});
