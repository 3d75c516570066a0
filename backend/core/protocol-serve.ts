// The protocol's shapes for serve runs (backend/core/protocol.ts maps the methods to them): where a
// serve run answers, its open episodes as conversations, and what it said to a posted reward.

/** Where a serve run answers: its base URL and the bearer token (and the file holding it). */
export interface ServeInfo {
  runId: string;
  baseUrl: string;
  tokenFile: string;
  token: string;
}

/** One turn of a served conversation, as the OpenAI client sent it (or the reply it got). */
export interface ServedMessage {
  role: string;
  content: string;
  tool_calls?: { id?: string; type?: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  name?: string;
}

/**
 * A served episode as a conversation: its turns, and the tokens after its first prompt with the
 * loss mask (1: the model's own tokens, trained; 0: the turns in between) and each token's text.
 */
export interface ServedEpisode {
  episodeId: string;
  taskId: string;
  calls: number;
  branches: number;
  lastActivity: number;
  messages: ServedMessage[];
  tokens: number[];
  mask: number[];
  logprobs: number[];
  /** The text of each token (absent where the run's tokenizer could not be read). */
  pieces?: string[];
}

/** What the serve run said to one posted reward. */
export interface ServedRewardResult {
  episodeId: string;
  status: 'accepted' | 'refused';
  /** Why it was refused: `already rewarded`, `unknown episode id`, ... */
  reason?: string;
  reward?: number;
}
