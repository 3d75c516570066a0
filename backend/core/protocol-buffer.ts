// The protocol's buffer and feedback shapes (backend/core/protocol.ts maps the methods to them): which
// buffer a request reads, the experience list's filter, rows and counts, one experience in detail,
// feedback changes and bulk promotion, per-task results and the tasks a run synthesized.
import type { Experience, ExperienceSource, ExperienceStatus, Feedback } from './types.js';

/** Where a buffer lives: a run id from the registry, or an explicit SQLite file / PostgreSQL URL. */
export interface BufferRef {
  runId?: string;
  path?: string;
}

export interface ExperienceFilter {
  runId?: string;
  taskId?: string;
  groupId?: string;
  source?: ExperienceSource;
  status?: ExperienceStatus;
  split?: 'train' | 'eval';
  minReward?: number;
  maxReward?: number;
  minVersion?: number;
  maxVersion?: number;
  /** true: only rejected; false: hide rejected; absent: both. */
  rejected?: boolean;
  /** Case-insensitive substring of prompt or response text. */
  text?: string;
}

export type ExperienceSortKey = 'createdAt' | 'reward' | 'modelVersion';

/** A row of the experience list: everything but the token arrays (kept small for 100k rows). */
export interface ExperienceSummary {
  id: string;
  taskId: string;
  groupId: string;
  runId: string;
  source: ExperienceSource;
  status: ExperienceStatus;
  reward: number;
  modelVersion: number;
  createdAt: number;
  promptPreview: string;
  responsePreview: string;
  responseTokens: number;
  /** How many times the trainer has taken it into a batch (an expert's count shows curation at work). */
  useCount?: number;
  feedback?: Feedback;
}

export interface BufferCounts {
  usual: number;
  expert: number;
  /** Tasks in the run's taskset(s), when known. */
  taskset: number;
  rejected: number;
  infraFailure: number;
}

/** An experience with, where the run's tokenizer is known, the text of each response token. */
export type ExperienceDetail = Experience & {
  responsePieces?: string[];
  /** The task's metadata: the taskset's own columns (`difficulty: "easy"`, `source`), as the file has them. */
  taskMetadata?: Record<string, unknown>;
};

/** One recorded feedback change; `undo` reverts it. */
export interface FeedbackChange {
  changeId: string;
  kind: 'rate' | 'promote' | 'reject' | 'add-expert' | 'bulk-promote';
  experienceIds: string[];
  at: number;
  /** How many experts a bulk promotion made (undone together by its one change id). */
  count?: number;
}

/** What a bulk promotion would do, before it is confirmed. */
export interface BulkPreview {
  /** Experiences that would be promoted. */
  count: number;
  /** Tasks they come from. */
  tasks: number;
  /** Lowest and highest reward among them (null when none). */
  minReward: number | null;
  maxReward: number | null;
}

export interface TaskStats {
  taskId: string;
  /** Usual experiences with status ok (infrastructure failures and eval rollouts left out). */
  rollouts: number;
  meanReward: number;
  /** Fraction of rollouts with the full reward (>= 1). */
  passRate: number;
}

/** A task made during a run by `taskset.pipeline` synthesize: its origin, parent task and explore step. */
export interface SynthesizedTask {
  id: string;
  /** `synth:augment` | `synth:model` | `synth:endpoint` */
  origin: string;
  parent: string;
  step: number;
  prompt: string;
  answer?: string;
}
