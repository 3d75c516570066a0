// The trainer's algorithm units, Trinity-RFT style: registries of small units, each one file.
//
// advantageFns (float64, plain numbers; the experience pipeline calls them):
//   grpo         (r - group mean) / (group sample std + epsilon); epsilon 1e-6, stdCalLevel group|batch
//   rloo         r minus the mean of the other rewards of the group
//   opmd         r minus a group baseline; opmdBaseline mean|logavgexp, tau 1
//   reinforce++  whitened discounted returns; gamma 1
//   gae          GAE with critic values, whitened (runs in the trainer); gamma 1, lam 1
// policyLosses (tfjs, differentiable, (inputs, params) => { loss, metrics, details }):
//   ppo    clipped surrogate; clipRange 0.2, clipRangeLow/High, clipRatioC 3 (dual clip),
//          lossAggMode, enableSequenceMasking, deltaSequenceMasking 0.1, fallbackToPolicyGradient
//   sft    NLL; lossAggMode
//   mix    (1 - mu)·GRPO(usual rows) + mu·SFT(expert rows); mu 0.1, clip params, agg modes per part
//   chord  mix with mu scheduled (muWarmupSteps, muDecaySteps, muPeak, muValley) and phi = p(1-p) SFT
//   opmd   AGG(-A·logprob)/(1 + tau); tau 1
//   dpo    stored preference pairs (even chosen, odd rejected; sampler 'pairs'); beta 0.1, labelSmoothing 0
// klFns (per-token estimators, tensor and number forms): k1, k2, k3, low_var_kl, abs, corrected_k3;
//   klLoss (kl_coef 0.001, token-mean) for a loss term, applyKlPenalty for a reward penalty.
// entropyFromLogits / entropyLoss: the entropy bonus (coef 0 by default; 'mix' = usual rows only).
// aggregate: token-mean, seq-mean-token-mean, seq-mean-token-sum, seq-mean-token-sum-norm.
// algorithms: named bundles sft, ppo, grpo, mix, chord, rloo, reinforce++, opmd, dpo;
//   configureAlgorithm applies run overrides, buildObjective turns a bundle into the trainer's Objective.
export { advantageFns } from './advantage/index.js';
export * from './policy_loss/index.js';
export { klFns, klLoss, applyKlPenalty } from './kl/index.js';
export { entropyFromLogits, entropyLoss } from './entropy.js';
export { aggregate } from './aggregate.js';
export { toCamel } from './params.js';
export { algorithms, configureAlgorithm, splitBatch } from './bundles.js';
export type { AlgorithmBundle, AlgorithmOverrides, Params } from './bundles.js';
export { buildObjective } from './bundle-objective.js';
export * from './types.js';
