// A configured bundle as the trainer's Objective: policy loss + kl_coef·AGG(kl) (KL as a loss)
// - entropy_coef·AGG(H), with one loss_agg_mode throughout, as the reference framework's actor loss.
import { tf } from '../../model/engine.js';
import type { Experience } from '../../core/types.js';
import type { LossInputs, LossOutput, Objective } from '../objective.js';
import { advantageFns } from './advantage/index.js';
import type { AlgorithmBundle } from './bundles.js';
import { entropyLoss } from './entropy.js';
import { applyKlPenalty, klLoss } from './kl/index.js';
import { distinctMetrics } from './masked.js';
import { policyLosses } from './policy_loss/index.js';

export function buildObjective(b: AlgorithmBundle): Objective {
  const pl = policyLosses.get(b.policyLoss.fn);
  const plParams: Record<string, unknown> = { ...b.policyLoss.params };
  if ('lossAggMode' in pl.defaults && plParams.lossAggMode === undefined) plParams.lossAggMode = b.lossAggMode;
  const klAsReward = b.kl && b.kl.as === 'reward' ? b.kl : null;
  if (klAsReward && !b.advantage)
    throw new Error(`algorithm '${b.name}': KL as a reward penalty needs an advantage function`);
  const klAsLoss = b.kl && b.kl.as === 'loss' ? b.kl : null;
  const withEntropy = b.entropyCoef !== 0;
  const trainerAdvantage = b.advantage && advantageFns.get(b.advantage.fn).where === 'trainer' ? b.advantage : null;
  return {
    name: b.name,
    needsReference: b.needsReference,
    needsCritic: b.needsCritic,
    needsEntropy: withEntropy,
    recomputeOldLogprobs: b.needsOldLogprobs,
    pairedRows: b.policyLoss.fn === 'dpo',
    computeAdvantages: trainerAdvantage
      ? (exps, values) => fillTrainerAdvantages(trainerAdvantage, exps, values)
      : undefined,
    applyRewardPenalty:
      klAsReward && b.advantage ? (exps, ref) => penalizeAndRecompute(b.advantage!, klAsReward, exps, ref) : undefined,
    loss(inputs: LossInputs): LossOutput {
      const pg = pl.compute(inputs, plParams);
      const metrics: Record<string, tf.Scalar | number> = {};
      // 'loss' is the trainer's own total: the policy part is logged as policy_loss.
      for (const [k, v] of Object.entries(pg.metrics)) metrics[k === 'loss' ? 'policy_loss' : k] = v;
      let total: tf.Scalar = pg.loss;
      if (klAsLoss) {
        if (!inputs.refLogprob) throw new Error(`algorithm '${b.name}': KL loss needs reference log-probs`);
        const kl = klLoss(
          klAsLoss.fn,
          {
            logprob: inputs.logprob,
            refLogprob: inputs.refLogprob,
            oldLogprob: inputs.oldLogprob,
            actionMask: inputs.actionMask,
          },
          { klCoef: klAsLoss.coef, lossAggMode: b.lossAggMode },
        );
        total = tf.add(total, kl.loss) as tf.Scalar;
        metrics.kl_loss = kl.metrics.kl_loss!;
      }
      if (withEntropy) {
        if (!inputs.entropy) throw new Error(`algorithm '${b.name}': entropy bonus needs per-token entropy`);
        const ent = entropyLoss(
          { entropy: inputs.entropy, actionMask: inputs.actionMask, expertMask: inputs.expertMask },
          { entropyCoef: b.entropyCoef, lossAggMode: b.lossAggMode, entropyLossFn: b.entropyLossFn },
        );
        total = tf.sub(total, ent.loss) as tf.Scalar;
        metrics.entropy_loss = ent.metrics.entropy_loss!;
      }
      return { loss: total, metrics: distinctMetrics(total, metrics) };
    },
  };
}

/** Outcome reward on the last response token (the token-level form advantage functions take). */
function outcomeTokenRewards(e: Experience): number[] {
  return e.responseTokens.map((_, j) => (j === e.responseTokens.length - 1 ? e.reward : 0));
}

/**
 * KL as a reward penalty (the reference framework's apply_kl_penalty): token rewards minus
 * kl_coef x kl(behaviour, reference) on trained tokens, then the advantages again from them.
 * Outcome-based functions (GRPO, RLOO, OPMD) score a row by its summed token rewards; the
 * penalised token rewards are kept on the rows for trainer-side functions (GAE).
 */
export function penalizeAndRecompute(
  adv: { fn: string; params: Record<string, unknown> },
  kl: { fn: string; coef: number },
  exps: Experience[],
  refLogprobs: number[][],
): { meanKl: number } {
  const rows = exps
    .map((e, i) => ({ e, ref: refLogprobs[i]! }))
    .filter((r) => r.e.source === 'usual' && r.e.status === 'ok');
  if (rows.length === 0) return { meanKl: 0 };
  const mask = rows.map((r) => r.e.actionMask.map((m) => (m ? 1 : 0)));
  const pen = applyKlPenalty(
    kl.fn,
    rows.map((r) => outcomeTokenRewards(r.e)),
    rows.map((r) => r.e.logprobs),
    rows.map((r) => r.ref),
    mask,
    kl.coef,
  );
  const fn = advantageFns.get(adv.fn);
  rows.forEach((r, i) => (r.e.metadata = { ...(r.e.metadata ?? {}), penalizedTokenRewards: pen.tokenLevelRewards[i] }));
  if (fn.where !== 'pipeline') return { meanKl: pen.meanKl };
  const out = fn.compute(
    {
      rewards: pen.tokenLevelRewards.map((row) => row.reduce((a, x) => a + x, 0)),
      groupIds: rows.map((r) => r.e.groupId),
      actionMask: mask,
      tokenLevelRewards: pen.tokenLevelRewards,
    },
    adv.params,
  );
  rows.forEach((r, i) => {
    r.e.advantages = out.advantages[i]!;
    r.e.returns = out.returns[i]!;
  });
  return { meanKl: pen.meanKl };
}

/**
 * Advantages that need the critic (GAE): the outcome reward sits on the last response token, values
 * come from the critic per response token; whitening spans the usual rows of the batch.
 */
export function fillTrainerAdvantages(
  adv: { fn: string; params: Record<string, unknown> },
  exps: Experience[],
  values: number[][],
): void {
  const rows = exps.map((e, i) => ({ e, v: values[i]! })).filter((r) => r.e.source === 'usual');
  if (rows.length === 0) return;
  const out = advantageFns.get(adv.fn).compute(
    {
      actionMask: rows.map((r) => r.e.actionMask.map((m) => (m ? 1 : 0))),
      tokenLevelRewards: rows.map(
        (r) => (r.e.metadata?.penalizedTokenRewards as number[] | undefined) ?? outcomeTokenRewards(r.e),
      ),
      values: rows.map((r) => r.v),
    },
    adv.params,
  );
  rows.forEach((r, i) => {
    r.e.advantages = out.advantages[i]!;
    r.e.returns = out.returns[i]!;
  });
}
