// POST /v1/rft/rewards: {"rewards": [{"episode_id": ..., "reward": ...}]}. Each item is accepted or
// refused by name (unknown id, already rewarded, not a finite number), so one bad item never loses
// the others. With a reward function from the config, an item may leave `reward` out: the function
// then scores the episode's last reply (against the item's `answer`, or the calls' metadata.answer).
import type { Task } from '../../core/types.js';
import type { RewardFn } from '../workflow.js';
import type { EpisodeBook } from './episodes.js';
import { badRequest } from './errors.js';

export interface RewardItemResult {
  episode_id: string | null;
  status: 'accepted' | 'refused';
  reason?: string;
  reward?: number;
}

export interface RewardsAnswer {
  object: 'rft.rewards';
  accepted: number;
  refused: number;
  results: RewardItemResult[];
}

export async function postRewards(book: EpisodeBook, body: unknown, rewardFn?: RewardFn): Promise<RewardsAnswer> {
  const items = (body as { rewards?: unknown } | null)?.rewards;
  if (typeof body !== 'object' || body === null || !Array.isArray(items))
    throw badRequest('expected {"rewards": [{"episode_id": ..., "reward": ...}, ...]}', 'rewards');
  const results: RewardItemResult[] = [];
  for (const item of items) {
    const it = (typeof item === 'object' && item !== null ? item : {}) as Record<string, unknown>;
    const id = typeof it.episode_id === 'string' ? it.episode_id : null;
    const refuse = (reason: string) => results.push({ episode_id: id, status: 'refused', reason });
    if (id === null) {
      refuse('episode_id must be a string');
      continue;
    }
    const why = book.refusal(id);
    if (why) {
      refuse(why);
      continue;
    }
    let reward = it.reward;
    let details: Record<string, number | string | boolean> | undefined;
    if (reward === undefined && rewardFn) {
      const ep = book.get(id)!;
      const branch = ep.branches[ep.branches.length - 1]!;
      const answer = typeof it.answer === 'string' ? it.answer : ep.metadata.answer;
      const task: Task = {
        id: ep.taskId,
        taskset: 'serve',
        domain: 'text',
        prompt: ep.firstUser,
        ...(answer !== undefined ? { answer } : {}),
      };
      const r = await rewardFn(task, branch.texts[branch.texts.length - 1] ?? '');
      if (r.status !== 'ok') {
        // The reward could not be computed: not the model's fault, so nothing is trained.
        refuse(`the reward function could not score it: ${r.reason ?? r.status}`);
        continue;
      }
      reward = r.reward;
      details = { ...r.details, reward_source: 'workflow.reward' };
    }
    if (typeof reward !== 'number' || !Number.isFinite(reward)) {
      refuse(`reward must be a finite number; got ${JSON.stringify(reward) ?? 'nothing'}`);
      continue;
    }
    try {
      await book.reward(id, reward, details);
    } catch (e) {
      refuse(`the buffer could not store it (the episode stays open; post again): ${(e as Error).message}`);
      continue;
    }
    results.push({ episode_id: id, status: 'accepted', reward });
  }
  const accepted = results.filter((r) => r.status === 'accepted').length;
  return { object: 'rft.rewards', accepted, refused: results.length - accepted, results };
}
