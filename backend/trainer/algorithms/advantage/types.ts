// Advantage functions work on plain float64 numbers (the experience pipeline calls them, no tensors).
export interface AdvantageInput {
  /** Outcome reward per row [B] (GRPO, RLOO, OPMD). */
  rewards?: number[];
  /** Group (task) id per row [B]: rows sharing an id form a group wherever they sit in the batch. */
  groupIds?: string[];
  /** [B][T] 0/1; gaps (environment tokens) and all-zero rows allowed. */
  actionMask: number[][];
  /** Per-token rewards [B][T] (REINFORCE++, GAE). */
  tokenLevelRewards?: number[][];
  /** Critic values [B][T] (GAE). */
  values?: number[][];
}

export interface AdvantageResult {
  advantages: number[][];
  returns: number[][];
  /** Per-row score before broadcasting over tokens (outcome-based functions). */
  scores?: number[];
  /** Per-group statistics: stat name -> group id -> value (e.g. group_reward_mean). */
  groupStats?: Record<string, Record<string, number>>;
  /** Batch-level values worth logging (e.g. batch_reward_std). */
  metrics: Record<string, number>;
  /** Further per-token arrays (GAE: advantages_unwhitened). */
  extra?: Record<string, number[][]>;
}

export type AdvantageInputName = 'rewards' | 'groupIds' | 'tokenLevelRewards' | 'values';

export interface AdvantageFn<P extends object = object> {
  name: string;
  description: string;
  defaults: P;
  requires: readonly AdvantageInputName[];
  /** Where it runs: 'pipeline' (from rewards, at experience time) or 'trainer' (needs the critic's values). */
  where: 'pipeline' | 'trainer';
  compute(input: AdvantageInput, params?: Partial<P>): AdvantageResult;
}
