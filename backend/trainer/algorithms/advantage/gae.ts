// GAE with a critic (PPO): δ_t = r_t + γ·V_{t+1} - V_t, Â_t = δ_t + γλ·Â_{t+1} over every position
// (V_T = Â_T = 0), returns = Â + V, advantages = whitened Â, not masked afterwards.
// Runs in the trainer because it needs the critic's values. Params: gamma (1.0), lam (1.0).
import { resolveParams } from '../params.js';
import { defineAdvantage } from './define.js';
import type { AdvantageFn, AdvantageInput, AdvantageResult } from './types.js';
import { requireInputs, whiten } from './util.js';

export interface GaeParams {
  gamma: number;
  lam: number;
}

export const gaeAdvantage: AdvantageFn<GaeParams> = defineAdvantage({
  name: 'gae',
  description: 'generalised advantage estimation with a critic (PPO)',
  defaults: { gamma: 1.0, lam: 1.0 },
  requires: ['tokenLevelRewards', 'values'],
  where: 'trainer',
  compute(input: AdvantageInput, given?: Partial<GaeParams>): AdvantageResult {
    const p = resolveParams('advantage', 'gae', gaeAdvantage.defaults, given);
    requireInputs('gae', input, gaeAdvantage.requires);
    const rewards = input.tokenLevelRewards!;
    const values = input.values!;
    const raw = rewards.map((row, b) => {
      const v = values[b]!;
      const out = new Array<number>(row.length);
      let next = 0;
      let nextValue = 0;
      for (let t = row.length - 1; t >= 0; t--) {
        const delta = row[t]! + p.gamma * nextValue - v[t]!;
        next = delta + p.gamma * p.lam * next;
        out[t] = next;
        nextValue = v[t]!;
      }
      return out;
    });
    const returns = raw.map((row, b) => row.map((a, t) => a + values[b]![t]!));
    const advantages = whiten(raw, input.actionMask, 'gae');
    return { advantages, returns, metrics: {}, extra: { advantages_unwhitened: raw } };
  },
});
