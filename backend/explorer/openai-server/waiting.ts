// GET /v1/rft/episodes: the episodes waiting for their reward, each as its conversation (the last
// branch's messages as the client sent them, and the reply) and its tokens after the prompt with the
// loss mask (1: the model's own tokens, trained; 0: turns in between). Not an OpenAI route: the
// editor's buffer browser lists these so a person can rate one (POST /v1/rft/rewards).
import type { EpisodeBook } from './episodes.js';
import type { ApiMessage } from './request.js';

export interface WaitingEpisode {
  episode_id: string;
  task_id: string;
  calls: number;
  branches: number;
  /** ms since the epoch. */
  last_activity: number;
  messages: ApiMessage[];
  tokens: number[];
  mask: number[];
  logprobs: number[];
}

export function waitingEpisodes(book: EpisodeBook): { object: 'list'; data: WaitingEpisode[] } {
  const data = book
    .waiting()
    .filter((ep) => !ep.busy)
    .map((ep) => {
      const b = ep.branches[ep.branches.length - 1]!;
      return {
        episode_id: ep.id,
        task_id: ep.taskId,
        calls: ep.branches.reduce((n, x) => n + x.calls, 0),
        branches: ep.branches.length,
        last_activity: ep.lastActivity,
        messages: b.transcript,
        tokens: b.tokens,
        mask: b.mask,
        logprobs: b.logprobs,
      };
    });
  return { object: 'list', data };
}
