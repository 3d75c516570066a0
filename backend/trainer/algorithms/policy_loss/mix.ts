// MIX = GRPO on usual rows + SFT on expert rows: loss = (1 - mu)·grpo_loss + mu·sft_loss, each part
// normalised over its own rows only (one micro-batch holds the whole batch: no accumulation scaling).
// Params: mu (0.1), clipRange (0.2), clipRangeLow / clipRangeHigh (null), lossAggMode (token-mean),
// grpoLossAggMode / sftLossAggMode (null: lossAggMode). The PPO part keeps clipRatioC = 3.
import { tf } from '../../../model/engine.js';
import { restrictRows, rowFlags } from '../masked.js';
import { resolveParams } from '../params.js';
import type { AggMode, LossResult, PolicyLossInputs } from '../types.js';
import { PPO_DEFAULTS, ppoCore } from './ppo.js';
import { definePolicyLoss } from './define.js';
import { sftCore } from './sft.js';

export interface MixParams {
  mu: number;
  clipRange: number;
  clipRangeLow: number | null;
  clipRangeHigh: number | null;
  lossAggMode: AggMode;
  grpoLossAggMode: AggMode | null;
  sftLossAggMode: AggMode | null;
}
export const MIX_DEFAULTS: MixParams = {
  mu: 0.1,
  clipRange: 0.2,
  clipRangeLow: null,
  clipRangeHigh: null,
  lossAggMode: 'token-mean',
  grpoLossAggMode: null,
  sftLossAggMode: null,
};

export interface MixParts {
  clipRange: number;
  clipRangeLow: number | null;
  clipRangeHigh: number | null;
  grpoMode: AggMode;
  sftMode: AggMode;
  /** Per-token weight of the SFT NLL (CHORD's phi), computed from the expert rows' log-probs. */
  sftWeight?: (logprob: tf.Tensor2D) => tf.Tensor2D;
  sftMetric: string;
}

/**
 * The two parts of MIX / CHORD, split with row masks (no gather: it has no gradient on wasm).
 * Returns each part (0 when its rows are absent) and the metrics of the parts present.
 */
export function mixParts(
  inputs: PolicyLossInputs,
  parts: MixParts,
): {
  grpo: tf.Scalar;
  sft: tf.Scalar;
  nUsual: number;
  nExpert: number;
  metrics: Record<string, tf.Scalar | number>;
} {
  const expert = inputs.expertMask!;
  const flags = rowFlags(expert);
  const nExpert = flags.filter(Boolean).length;
  const nUsual = flags.length - nExpert;
  const metrics: Record<string, tf.Scalar | number> = {};
  let grpo = tf.scalar(0);
  let sft = tf.scalar(0);
  if (nUsual > 0) {
    const usualMask = restrictRows(inputs.actionMask, tf.sub(1, expert) as tf.Tensor1D);
    const ppo = ppoCore(
      inputs.logprob,
      inputs.oldLogprob!,
      inputs.advantages!,
      usualMask,
      {
        ...PPO_DEFAULTS,
        clipRange: parts.clipRange,
        clipRangeLow: parts.clipRangeLow,
        clipRangeHigh: parts.clipRangeHigh,
        lossAggMode: parts.grpoMode,
      },
      nUsual,
    );
    grpo = ppo.loss;
    for (const [k, v] of Object.entries(ppo.metrics)) metrics[`usual/${k}`] = v;
  }
  if (nExpert > 0) {
    const expertMask = restrictRows(inputs.actionMask, expert);
    const weight = parts.sftWeight?.(inputs.logprob);
    sft = sftCore(inputs.logprob, expertMask, parts.sftMode, nExpert, weight);
    metrics[`expert/${parts.sftMetric}`] = sft;
  }
  return { grpo, sft, nUsual, nExpert, metrics };
}

export const mixLoss = definePolicyLoss<MixParams>({
  name: 'mix',
  description: 'GRPO on usual rows + mu · SFT on expert rows (MIX)',
  defaults: MIX_DEFAULTS,
  requires: ['oldLogprob', 'advantages', 'expertMask'],
  compute(inputs: PolicyLossInputs, given?: Partial<MixParams>): LossResult {
    const p = resolveParams('policy loss', 'mix', MIX_DEFAULTS, given);
    const parts = mixParts(inputs, {
      clipRange: p.clipRange,
      clipRangeLow: p.clipRangeLow,
      clipRangeHigh: p.clipRangeHigh,
      grpoMode: p.grpoLossAggMode ?? p.lossAggMode,
      sftMode: p.sftLossAggMode ?? p.lossAggMode,
      sftMetric: 'sft_loss',
    });
    const loss = tf.add(tf.mul(parts.grpo, 1 - p.mu), tf.mul(parts.sft, p.mu)) as tf.Scalar;
    return {
      loss,
      metrics: {
        ...parts.metrics,
        loss,
        grpo_loss: parts.grpo,
        sft_loss: parts.sft,
        n_usual: parts.nUsual,
        n_expert: parts.nExpert,
        mu: p.mu,
      },
    };
  },
});
