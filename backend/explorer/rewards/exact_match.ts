// exact_match: the trimmed response equals task.answer. With `metadata.partial_credit` the reward
// is 0.5 * exact + 0.5 * (characters right in their position / the longer length), a dense signal
// for small models learning algorithmic tasks (the built-in `reverse` taskset).
import type { Task } from '../../core/types.js';
import type { RewardResult } from '../workflow.js';
import { badTask } from './bad-task.js';

export async function exactMatch(task: Task, response: string): Promise<RewardResult> {
  if (typeof task.answer !== 'string') return badTask('exact_match needs task.answer');
  const want = task.answer.trim();
  const got = response.trim();
  const exact = got === want ? 1 : 0;
  if (task.metadata?.partial_credit !== true) return { reward: exact, status: 'ok', details: { exact } };
  let same = 0;
  for (let i = 0; i < want.length && i < got.length; i++) if (got[i] === want[i]) same++;
  const positional = same / Math.max(want.length, got.length, 1);
  return { reward: 0.5 * exact + 0.5 * positional, status: 'ok', details: { exact, positional } };
}
