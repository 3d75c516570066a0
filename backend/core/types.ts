// Shared data types of the RFT engine. The extension and webviews import these (types only).

export type Domain = 'math' | 'code' | 'k12' | 'vision' | 'multiturn' | 'text';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'environment';
  content: string;
}

/** A test case for a code task: call `fn(...args)` and compare with `expected` (deep equality). */
export interface CodeTestCase {
  args: unknown[];
  expected: unknown;
}

/** A small image as row-major RGB bytes (values 0..255), length = width * height * 3. */
export interface TaskImage {
  width: number;
  height: number;
  rgb: number[];
}

export interface Task {
  id: string;
  /** Name of the taskset (file path or built-in generator name) the task came from. */
  taskset: string;
  domain: Domain;
  /** Single-turn prompt text; multi-turn tasks may use `messages` instead. */
  prompt?: string;
  messages?: ChatMessage[];
  /** Reference answer (math, K-12), a multiple-choice letter, or a target. */
  answer?: string;
  /** Multiple-choice options, for K-12 choice questions. */
  choices?: string[];
  /** Code tasks: name of the function to write and its tests. */
  entryPoint?: string;
  tests?: CodeTestCase[];
  image?: TaskImage;
  /** 0 (easy) .. 1 (hard); from the taskset or scored by the task pipeline. */
  difficulty?: number;
  metadata?: Record<string, unknown>;
}

export type ExperienceSource = 'usual' | 'expert';
/**
 * `infra_failure`: the system failed (sandbox crash, reward service timeout); never trained on.
 * `partial`: a trajectory cut at the per-step token budget (explorer.partial_rollout), or a finished
 * sample waiting for the rest of its group; continued in a later explore step, never trained on as such.
 */
export type ExperienceStatus = 'ok' | 'invalid' | 'infra_failure' | 'partial';

/** Response tokens [start, end) sampled by weights `version` (partial rollouts span several). */
export interface TokenSegment {
  version: number;
  start: number;
  end: number;
  /** Explore step that sampled them. */
  step?: number;
}

export interface Feedback {
  rating?: number;
  note?: string;
  /** Id of the experience this one was edited from (expert promotion with an edited response). */
  editedFrom?: string;
  rejected?: boolean;
  by?: string;
  at?: number;
}

export interface Experience {
  id: string;
  taskId: string;
  /** Samples of one task in one explore step share a group id (GRPO group). */
  groupId: string;
  runId: string;
  source: ExperienceSource;
  promptTokens: number[];
  promptText: string;
  responseTokens: number[];
  responseText: string;
  /** Same length as responseTokens: 1 where the model produced the token (trained on), 0 for environment tokens. */
  actionMask: number[];
  /** Behaviour-policy log-prob of every response token (0 where actionMask is 0); empty for hand-written expert data. */
  logprobs: number[];
  /** Version of the weights that produced the response (of its last segment when it has several); -1 for human-written data. */
  modelVersion: number;
  /** Partial rollouts: which weights sampled which response tokens, in order, covering the response. */
  segments?: TokenSegment[];
  reward: number;
  rewardDetails?: Record<string, number | string | boolean>;
  status: ExperienceStatus;
  /** Why an experience is invalid or an infra failure. */
  statusReason?: string;
  /** Per-token advantages / returns once the experience pipeline has computed them. */
  advantages?: number[];
  returns?: number[];
  useCount: number;
  createdAt: number;
  feedback?: Feedback;
  /** Eval / bench experiences are stored apart from training ones. */
  split?: 'train' | 'eval';
  metadata?: Record<string, unknown>;
}
