// The buffer's storage contract. Every backend (SQLite, PostgreSQL) implements `ExperienceStore`
// with the same behaviour, proven by one shared test suite (test/buffer/storage-suite.ts).
import type { ExperienceFilter } from '../../core/protocol.js';
import type { Experience, ExperienceSource, Feedback, Task } from '../../core/types.js';

/** Filters for browsing (UI, CLI): the wire type of core/protocol.ts, so the two never differ. */
export type { ExperienceFilter };

export type SortKey = 'seq' | 'createdAt' | 'reward' | 'modelVersion' | 'useCount';
export interface ListOptions extends ExperienceFilter {
  offset?: number;
  limit?: number;
  sort?: SortKey;
  desc?: boolean;
}

/** Which experiences a sampling read may take. Only status 'ok', non-rejected, split != 'eval' rows ever qualify. */
export interface TakeOptions {
  n: number;
  /**
   * Only this run's experiences, and the batch is recorded under (run, consumer, step): runs sharing one
   * database never take each other's rows or replay each other's batches. Without it (a buffer file that
   * holds one run) every run's rows qualify and the batch is recorded under run ''.
   */
  runId?: string;
  /** Trainer id + step: the batch is recorded, and asking again for the same (consumer, step, part) returns it again. */
  consumer?: string;
  step?: number;
  /** Part of a step's batch ('usual', 'expert'); default 'main'. */
  part?: string;
  now?: number;
}

export interface FifoTake extends TakeOptions {
  source: ExperienceSource;
  /** Only model_version >= minVersion (staleness bound); older unused rows are counted, not taken. */
  minVersion?: number;
}

export interface PriorityTake extends TakeOptions {
  source: ExperienceSource;
  minVersion?: number;
  /** Rows used this many times are never taken again. */
  maxUses: number;
  /** score = priority * useDecay^useCount * 0.5^(age / halfLifeMs). */
  useDecay: number;
  halfLifeMs: number;
}

/** Expert data is reused: least-used first, then oldest; no use limit unless given. */
export interface CycleTake extends TakeOptions {
  source: ExperienceSource;
  maxUses?: number;
}

export interface TakeResult {
  experiences: Experience[];
  /** True when this batch had been taken before for the same (consumer, step, part) and is returned again. */
  replayed: boolean;
}

/** What a sampler could take now: used to explain why a blocking read waits. */
export interface Availability {
  /** Rows the read could take. */
  ready: number;
  /** Unused rows skipped only because they are older than the staleness bound. */
  stale: number;
}

export interface AppendOptions {
  replacing?: string[];
}

export interface AppendResult {
  inserted: number;
  /** Ids already present (an explorer retrying a batch it was unsure about): skipped, not overwritten. */
  duplicates: string[];
}

/** What `availability` counts (the same predicate as the take). */
export interface AvailabilityQuery {
  source: ExperienceSource;
  minVersion?: number;
  maxUses?: number;
  runId?: string;
}

export interface BufferStats {
  total: number;
  bySource: Record<string, number>;
  byStatus: Record<string, number>;
  rejected: number;
  unused: number;
  minVersion: number | null;
  maxVersion: number | null;
  meanReward: number | null;
  tasks: number;
  feedback: number;
  checkpoints: number;
}

export interface CheckpointRecord {
  runId: string;
  version: number;
  path: string;
  checksum: string;
  createdAt: number;
}

export type FeedbackAction = 'rate' | 'reject' | 'unreject' | 'promote' | 'add_expert' | 'undo';

export interface FeedbackLogEntry {
  id: number;
  experienceId: string;
  who: string;
  at: number;
  action: FeedbackAction;
  before: unknown;
  after: unknown;
  /** For 'undo' rows: the log id reverted. */
  undoes: number | null;
  /** Set on a row once it has been undone: the id of the undo row. */
  undoneBy: number | null;
}

/**
 * One atomic feedback change: an optional in-place update (guarded by the values the change expects to find),
 * an optional insert or delete, and the log row. `mutate` applies all of it or nothing.
 */
export interface FeedbackMutation {
  log: Omit<FeedbackLogEntry, 'id' | 'undoneBy'>;
  update?: {
    id: string;
    expect: { source: ExperienceSource; feedback: Feedback | null };
    set: { source: ExperienceSource; feedback: Feedback | null };
  };
  insert?: Experience;
  /** Delete this experience; `expect` is its full expected JSON (conflict if it changed). */
  delete?: { id: string; expect: Experience };
  /** Mark that log row as undone by the row being written. */
  markUndone?: number;
}

/** Where a preference pair comes from (backend/buffer/pairs.ts derives them from the buffer). */
export type PairOrigin = 'curation' | 'rating' | 'long2short';
export const PAIR_ORIGINS: readonly PairOrigin[] = ['curation', 'rating', 'long2short'];

/** A preference pair: two responses to the same prompt (task), one preferred; DPO trains on these. */
export interface PreferencePair {
  /** Deterministic: `origin:chosenId>rejectedId` (the same pair derived twice is one row). */
  id: string;
  runId: string;
  taskId: string;
  chosenId: string;
  rejectedId: string;
  origin: PairOrigin;
  createdAt: number;
  useCount: number;
}

export interface ExperienceStore {
  /** 'sqlite' | 'postgres' */
  readonly kind: string;
  /** Where it lives, without secrets. */
  readonly location: string;

  /**
   * One transaction; resolves only after commit (acknowledged = durable). `replacing`: ids of
   * `partial` rows deleted in the same transaction (a partial rollout continued or finished: its row
   * is written again); one that is not a partial row any more fails the whole append (ConflictError).
   */
  appendExperiences(batch: Experience[], opts?: AppendOptions): Promise<AppendResult>;
  get(id: string): Promise<Experience | null>;
  getMany(ids: string[]): Promise<Experience[]>;
  list(opts?: ListOptions): Promise<Experience[]>;
  count(filter?: ExperienceFilter): Promise<number>;
  group(groupId: string): Promise<Experience[]>;
  /** Keyset pagination in insertion order, for export: rows with seq > afterSeq (of one run when runId is given). */
  scan(afterSeq: number, limit: number, runId?: string): Promise<{ seq: number; experience: Experience }[]>;
  stats(runId?: string): Promise<BufferStats>;
  setPriority(ids: string[], priority: number): Promise<void>;

  /** Sampling reads: mark use counts atomically; all-or-nothing (fewer than n available => empty). */
  takeFifo(opts: FifoTake): Promise<TakeResult>;
  takePriority(opts: PriorityTake): Promise<TakeResult>;
  takeCycle(opts: CycleTake): Promise<TakeResult>;
  availability(kind: 'fifo' | 'priority' | 'cycle', opts: AvailabilityQuery): Promise<Availability>;
  /** The ids recorded for a consumer's step (all parts), in batch order; runId as in TakeOptions ('' when unscoped). */
  consumed(consumer: string, step: number, runId?: string): Promise<string[]>;
  lastConsumedStep(consumer: string, runId?: string): Promise<number | null>;

  mutate(m: FeedbackMutation): Promise<number>;
  feedbackLog(opts?: { experienceId?: string; limit?: number }): Promise<FeedbackLogEntry[]>;
  feedbackEntry(id: number): Promise<FeedbackLogEntry | null>;

  /**
   * Pairs of one run and these origins become exactly `pairs` (one transaction): pairs no longer
   * derived are deleted, new ones inserted, surviving ones keep their use counts. Returns the count.
   */
  replacePairs(
    runId: string,
    origins: readonly PairOrigin[],
    pairs: Omit<PreferencePair, 'useCount'>[],
  ): Promise<number>;
  listPairs(opts?: { runId?: string; origin?: PairOrigin; offset?: number; limit?: number }): Promise<PreferencePair[]>;
  /** n pairs, least-used first then oldest, their use counts marked; fewer than n available => empty. */
  takePairs(opts: { n: number; runId?: string; maxUses?: number }): Promise<PreferencePair[]>;

  putTasks(runId: string, tasks: Task[]): Promise<number>;
  listTasks(runId: string, opts?: { offset?: number; limit?: number }): Promise<Task[]>;
  countTasks(runId: string): Promise<number>;
  /** One task of a run by its id (the experience browser shows its own columns), or null. */
  getTask(runId: string, id: string): Promise<Task | null>;

  addCheckpoint(c: CheckpointRecord): Promise<void>;
  listCheckpoints(runId: string): Promise<CheckpointRecord[]>;
  latestCheckpoint(runId: string): Promise<CheckpointRecord | null>;

  getState<T = unknown>(runId: string, key: string): Promise<T | null>;
  setState(runId: string, key: string, value: unknown): Promise<void>;

  schemaVersion(): Promise<number>;
  close(): Promise<void>;
}
