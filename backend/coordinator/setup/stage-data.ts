// What a stage trains on and whether it explores, decided here and nowhere else (issue 42 item 4):
// the stage loop, the config check, the sampler and the distributed planner all ask these two.
import { resolveAlgorithm } from '../../trainer/resolve-algorithm.js';
import type { AlgorithmBundle } from '../../trainer/algorithms/index.js';

/**
 * What a stage's trainer batches hold: the step's rollouts alone, rollouts with an expert share,
 * expert rows alone (SFT), or stored preference pairs (DPO).
 */
export type StageReads = 'rollouts' | 'mixed' | 'expert' | 'pairs';

/** From the algorithm's bundle (its expert share, with params.expert_ratio over it). Throws on an unknown algorithm. */
export function stageReads(algorithm: { name: string; params: Record<string, unknown> }): StageReads {
  return readsOf(resolveAlgorithm(algorithm.name, algorithm.params));
}

function readsOf(bundle: AlgorithmBundle): StageReads {
  if (bundle.policyLoss.fn === 'dpo') return 'pairs';
  const ratio = bundle.sampling.expertRatio;
  return ratio >= 1 ? 'expert' : ratio > 0 ? 'mixed' : 'rollouts';
}

/** The expert share of a stage's batches (0 for pairs: DPO reads neither expert rows nor rollouts). */
export function stageExpertRatio(algorithm: { name: string; params: Record<string, unknown> }): number {
  const bundle = resolveAlgorithm(algorithm.name, algorithm.params);
  return readsOf(bundle) === 'pairs' ? 0 : bundle.sampling.expertRatio;
}

/**
 * Whether a stage explores: its mode is not `train`, its batches are not expert rows alone, and its
 * loss is not SFT's (SFT with an expert_ratio below 1 trains on buffer rows, e.g. `buffer.train_from`,
 * never on its own unfiltered samples). DPO explores: the long2short pairs come from its rollouts.
 */
export function stageExplores(stage: {
  mode?: string;
  algorithm: { name: string; params: Record<string, unknown> };
}): boolean {
  const bundle = resolveAlgorithm(stage.algorithm.name, stage.algorithm.params);
  return stage.mode !== 'train' && readsOf(bundle) !== 'expert' && bundle.policyLoss.fn !== 'sft';
}
