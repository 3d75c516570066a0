// CHORD: MIX with a scheduled mu (linear warmup to muPeak, cosine decay to muValley) and, by default,
// the phi-weighted SFT on expert rows: each token's NLL weighted by phi = p(1 - p), p = exp(logprob),
// with phi treated as a constant (no gradient), so near-certain and near-impossible tokens weigh little.
// Params: muWarmupSteps (0), muDecaySteps (0), muPeak (0.1), muValley (0.1), enablePhiFunction (true),
// clipRange (0.2), clipRangeLow / clipRangeHigh (null), lossAggMode (token-mean),
// grpoLossAggMode / sftLossAggMode (null: lossAggMode).
import { tf } from '../../../model/engine.js';
import { noGrad } from '../masked.js';
import { resolveParams } from '../params.js';
import type { AggMode, LossResult, PolicyLossInputs } from '../types.js';
import { mixParts } from './mix.js';
import { definePolicyLoss } from './define.js';

export interface ChordParams {
  muWarmupSteps: number;
  muDecaySteps: number;
  muPeak: number;
  muValley: number;
  enablePhiFunction: boolean;
  clipRange: number;
  clipRangeLow: number | null;
  clipRangeHigh: number | null;
  lossAggMode: AggMode;
  grpoLossAggMode: AggMode | null;
  sftLossAggMode: AggMode | null;
}
export const CHORD_DEFAULTS: ChordParams = {
  muWarmupSteps: 0,
  muDecaySteps: 0,
  muPeak: 0.1,
  muValley: 0.1,
  enablePhiFunction: true,
  clipRange: 0.2,
  clipRangeLow: null,
  clipRangeHigh: null,
  lossAggMode: 'token-mean',
  grpoLossAggMode: null,
  sftLossAggMode: null,
};

/** mu at `step`: linear warmup from 0 to muPeak, then cosine decay to muValley over muDecaySteps. */
export function chordMu(
  step: number,
  p: Pick<ChordParams, 'muWarmupSteps' | 'muDecaySteps' | 'muPeak' | 'muValley'>,
): number {
  if (step < p.muWarmupSteps) return (step / p.muWarmupSteps) * p.muPeak;
  if (step >= p.muWarmupSteps + p.muDecaySteps) return p.muValley;
  const cos = 0.5 * (1 + Math.cos((Math.PI * (step - p.muWarmupSteps)) / p.muDecaySteps));
  return (p.muPeak - p.muValley) * cos + p.muValley;
}

/** phi = p(1 - p) per token, as a constant (stop-gradient). */
export function phiWeight(logprob: tf.Tensor2D): tf.Tensor2D {
  return noGrad((lp) => {
    const prob = tf.exp(lp);
    return tf.mul(prob, tf.sub(1, prob));
  }, logprob) as tf.Tensor2D;
}

export const chordLoss = definePolicyLoss<ChordParams>({
  name: 'chord',
  description: 'MIX with scheduled mu and phi-weighted SFT (CHORD)',
  defaults: CHORD_DEFAULTS,
  requires: ['oldLogprob', 'advantages', 'expertMask'],
  compute(inputs: PolicyLossInputs, given?: Partial<ChordParams>): LossResult {
    const p = resolveParams('policy loss', 'chord', CHORD_DEFAULTS, given);
    const mu = chordMu(inputs.step ?? 0, p);
    const parts = mixParts(inputs, {
      clipRange: p.clipRange,
      clipRangeLow: p.clipRangeLow,
      clipRangeHigh: p.clipRangeHigh,
      grpoMode: p.grpoLossAggMode ?? p.lossAggMode,
      sftMode: p.sftLossAggMode ?? p.lossAggMode,
      sftWeight: p.enablePhiFunction ? phiWeight : undefined,
      sftMetric: p.enablePhiFunction ? 'sft_phi_loss' : 'sft_loss',
    });
    const loss = tf.add(tf.mul(parts.grpo, 1 - mu), tf.mul(parts.sft, mu)) as tf.Scalar;
    return {
      loss,
      metrics: {
        ...parts.metrics,
        loss,
        grpo_loss: parts.grpo,
        sft_loss: parts.sft,
        n_usual: parts.nUsual,
        n_expert: parts.nExpert,
        mu,
      },
    };
  },
});
