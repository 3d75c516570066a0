// What the JSON-RPC server needs from the rest of the backend, as narrow interfaces ("ports").
// The real implementations are adapters over backend/buffer (storage, feedback, taskset, run
// registry) and, later, the coordinator's RunController; the server code depends only on these.
import type { Experience } from '../core/types.js';
import type {
  BufferCounts,
  BufferRef,
  BulkPreview,
  ComponentState,
  ExperienceDetail,
  ExperienceFilter,
  ExperienceSortKey,
  ExperienceSummary,
  FeedbackChange,
  MetricsPoint,
  RunInfo,
  SynthesizedTask,
  TaskStats,
  TasksetReading,
  TasksetReport,
} from '../core/protocol.js';
import type { WorkspacePaths } from './confine.js';

export interface ListQuery {
  filter?: ExperienceFilter;
  sort?: ExperienceSortKey;
  descending?: boolean;
  offset: number;
  limit: number;
}

/** One open buffer (a SQLite file or a PostgreSQL database). */
export interface BufferPort {
  readonly path: string;
  list(q: ListQuery): Promise<{ total: number; rows: ExperienceSummary[] }>;
  counts(): Promise<BufferCounts>;
  get(id: string): Promise<ExperienceDetail | null>;
  group(groupId: string): Promise<Experience[]>;
  /** Per-task results of the usual experiences of a run (all runs when absent). */
  taskStats?(runId?: string): Promise<TaskStats[]>;
  /** Tasks a run synthesized (taskset.pipeline synthesize), the last `limit`, and counts per origin. */
  synthesized?(
    runId: string,
    limit: number,
  ): Promise<{ total: number; byOrigin: Record<string, number>; tasks: SynthesizedTask[] }>;
  /** A run's taskset tasks (id and prompt), the first `limit` in taskset order, and how many there are. */
  tasks?(runId: string, limit: number): Promise<{ total: number; tasks: { id: string; prompt: string }[] }>;
  /** The preference pairs the run's buffer makes now (curation, rating, long2short), for DPO. */
  pairs?(runId: string): Promise<{ total: number; byOrigin: Record<string, number> }>;
  /** Every experience matching the filter, in creation order (export). */
  iterate(filter?: ExperienceFilter): AsyncIterable<Experience>;
  close(): Promise<void>;
}

/** Human feedback on one buffer; every change is recorded and undoable. */
export interface FeedbackPort {
  rate(id: string, rating: number, note?: string): Promise<FeedbackChange>;
  promote(id: string, editedResponse?: string): Promise<FeedbackChange & { expertId: string }>;
  reject(id: string, note?: string): Promise<FeedbackChange>;
  addExpert(
    taskId: string,
    prompt: string,
    response: string,
    runId?: string,
  ): Promise<FeedbackChange & { expertId: string }>;
  bulkPromote(topK: number, filter?: ExperienceFilter): Promise<FeedbackChange>;
  bulkPreview(topK: number, filter?: ExperienceFilter): Promise<BulkPreview>;
  /** Undo the given change, or the latest one; null when there is nothing to undo. */
  undo(changeId?: string): Promise<FeedbackChange | null>;
}

export interface OpenBuffer {
  buffer: BufferPort;
  /** Absent until the buffer's feedback module is wired in (requests then fail NotAvailable). */
  feedback?: FeedbackPort;
}

/** Opens buffers by run id or path (the server caches what it opened). */
export interface BufferOpener {
  /** Resolves a ref to a canonical key (file path / URL) so that the same buffer is opened once. */
  resolve(ref: BufferRef): Promise<string>;
  open(key: string): Promise<OpenBuffer>;
}

export interface Disposable {
  dispose(): void | Promise<void>;
}

export interface TasksetPort {
  /** Validate a file on disk, or the given unsaved text as if it were that file. */
  validate(file: string, text?: string, reading?: TasksetReading): Promise<TasksetReport>;
  /** Watch files; calls back with a fresh report after every change (and once at start). */
  watch(files: string[], onReport: (r: TasksetReport) => void): Disposable;
}

export interface RunRegistryPort {
  list(): Promise<RunInfo[]>;
  get(runId: string): Promise<(RunInfo & { config?: unknown }) | null>;
}

/**
 * Starting and steering runs. The coordinator implements this; until it does, the server uses
 * `UnavailableRunController`, which answers every call with a clear NotAvailable error.
 */
export interface RunController {
  start(configPath: string): Promise<RunInfo>;
  stop(runId: string): Promise<RunInfo>;
  /** config: 'new' takes the config file as it is now, 'kept' the one the run started with (`rft resume --use-new-config / --keep-config`). */
  resume(runId: string, config?: 'new' | 'kept'): Promise<RunInfo>;
  /** Stop after the current step with a checkpoint, recorded as paused. */
  pause?(runId: string): Promise<RunInfo>;
  evaluate(
    checkpoint: string,
    taskset: string,
    opts?: { runId?: string; config?: string; format?: Record<string, string> },
  ): Promise<{ accuracy: number; tasks: number }>;
  components?(runId: string): Promise<ComponentState[]>;
  metrics?(runId: string, sinceStep?: number): Promise<MetricsPoint[]>;
  /** The run's log file and its last lines (why a run failed). */
  log?(runId: string, lines: number): Promise<{ path: string; lines: string[] }>;
  /** Live updates the server forwards as `run/status` and `run/metrics` notifications. */
  onStatus?(cb: (r: RunInfo & { components?: ComponentState[] }) => void): Disposable;
  onMetrics?(cb: (m: MetricsPoint) => void): Disposable;
}

export interface ServerDeps {
  /** Where request paths must stay (the workspace). */
  paths: WorkspacePaths;
  buffers?: BufferOpener;
  tasksets?: TasksetPort;
  runs?: RunRegistryPort;
  control: RunController;
  /** Buffer used when a request names none (from `rft serve --buffer`). */
  defaultBuffer?: BufferRef;
}
