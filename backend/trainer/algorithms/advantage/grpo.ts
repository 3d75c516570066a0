// GRPO: per group, score = (r - mean) / (std + epsilon) with the sample std; a group of one gets
// mean 0, std 1. std_cal_level 'batch' divides by the sample std of all rewards instead.
// Params: epsilon (1e-6), stdCalLevel ('group' | 'batch').
import { InputError } from '../../../core/errors.js';
import { resolveParams } from '../params.js';
import { defineAdvantage } from './define.js';
import type { AdvantageFn, AdvantageInput, AdvantageResult } from './types.js';
import { broadcastScores, groupRows, mean, requireInputs, sampleStd } from './util.js';

export interface GrpoParams {
  epsilon: number;
  stdCalLevel: 'group' | 'batch';
}

export const grpoAdvantage: AdvantageFn<GrpoParams> = defineAdvantage({
  name: 'grpo',
  description: 'group-normalised outcome reward (GRPO)',
  defaults: { epsilon: 1e-6, stdCalLevel: 'group' },
  requires: ['rewards', 'groupIds'],
  where: 'pipeline',
  compute(input: AdvantageInput, given?: Partial<GrpoParams>): AdvantageResult {
    const p = resolveParams('advantage', 'grpo', grpoAdvantage.defaults, given);
    if (p.stdCalLevel !== 'group' && p.stdCalLevel !== 'batch') {
      throw new InputError(`advantage 'grpo': stdCalLevel must be 'group' or 'batch', got '${p.stdCalLevel}'`);
    }
    requireInputs('grpo', input, grpoAdvantage.requires);
    const rewards = input.rewards!;
    const metrics: Record<string, number> = {};
    let batchStd = 1;
    if (p.stdCalLevel === 'batch') {
      batchStd = rewards.length > 1 ? sampleStd(rewards) : 1;
      metrics.batch_reward_std = batchStd;
    }
    const scores = new Array<number>(rewards.length);
    const groupMean: Record<string, number> = {};
    const groupStd: Record<string, number> = {};
    for (const [gid, rows] of groupRows(input.groupIds!)) {
      const rs = rows.map((i) => rewards[i]!);
      const mu = rs.length === 1 ? 0 : mean(rs);
      const sd = rs.length === 1 ? 1 : sampleStd(rs);
      groupMean[gid] = mu;
      groupStd[gid] = sd;
      const div = (p.stdCalLevel === 'batch' ? batchStd : sd) + p.epsilon;
      for (const i of rows) scores[i] = (rewards[i]! - mu) / div;
    }
    const advantages = broadcastScores(scores, input.actionMask);
    return {
      advantages,
      returns: advantages.map((r) => r.slice()),
      scores,
      groupStats: { group_reward_mean: groupMean, group_reward_std: groupStd },
      metrics,
    };
  },
});
