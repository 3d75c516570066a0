// How many of a step's rollout groups teach nothing: a group whose rewards are all equal has zero
// advantage on every row under GRPO's group normalisation (and RLOO's leave-one-out baseline), so it
// adds no policy gradient. Reported per step (the stall guard names the share when a run stops learning).
import type { Experience } from '../core/types.js';

/** Rewards closer together than this count as equal (reward_filter's eps). */
const EQUAL_EPS = 1e-6;

/** Groups of two or more ok rollouts in the batch, and those whose rewards are all equal. */
export function groupSpread(usual: Experience[]): { zero_variance_groups?: number; zero_variance_share?: number } {
  const groups = new Map<string, number[]>();
  for (const e of usual)
    if (e.status === 'ok') (groups.get(e.groupId) ?? groups.set(e.groupId, []).get(e.groupId)!).push(e.reward);
  let n = 0;
  let flat = 0;
  for (const rs of groups.values()) {
    if (rs.length < 2) continue;
    n++;
    if (Math.max(...rs) - Math.min(...rs) <= EQUAL_EPS) flat++;
  }
  return n ? { zero_variance_groups: flat, zero_variance_share: flat / n } : {};
}
