// Typed JSON-RPC protocol between the VS Code extension (src/) and the backend (`rft serve`).
// The extension imports only the TYPES from here; method names are string literal keys of the
// maps below, so a typo or a wrong param shape is a compile error on both sides. The shapes the
// methods carry live by concern in protocol-buffer.ts, protocol-checks.ts, protocol-runs.ts,
// protocol-serve.ts and protocol-models.ts; this module re-exports them, so importers name only this one.
import type {
  BufferCounts,
  BufferRef,
  BulkPreview,
  ExperienceDetail,
  ExperienceFilter,
  ExperienceSortKey,
  ExperienceSummary,
  FeedbackChange,
  SynthesizedTask,
  TaskStats,
} from './protocol-buffer.js';
import type { ConfigIssueAt, TasksetReading, TasksetReport } from './protocol-checks.js';
import type {
  CachedDataset,
  CachedModel,
  DatasetPreview,
  ImportedModel,
  ModelInfo,
  RewardModelReport,
} from './protocol-models.js';
import type { ComponentState, MetricsPoint, RunInfo, WorkerInfo } from './protocol-runs.js';
import type { ServedEpisode, ServedRewardResult, ServeInfo } from './protocol-serve.js';
import type { Experience } from './types.js';

export type * from './protocol-buffer.js';
export type * from './protocol-checks.js';
export type * from './protocol-models.js';
export type * from './protocol-runs.js';
export type * from './protocol-serve.js';

// ---------------------------------------------------------------- server shapes

/** The tensor engine the backend's runs will use (`server/engine`; the status bar shows it). */
export interface EngineSummary {
  /** RFT_BACKEND as the backend sees it (`auto` when unset; rftStudio.engine sets it). */
  requested: string;
  engine: 'cpu' | 'webgpu';
  /** False when the requested engine cannot start here (no GPU adapter): runs would stop. */
  ok: boolean;
  /** The GPU adapter, e.g. "nvidia hopper (NVIDIA H200)". */
  adapter?: string;
  /** The adapter is a CPU implementation (SwiftShader). */
  fallback?: boolean;
  /** One line for a tooltip. */
  detail: string;
}

export interface ServerCapabilities {
  buffer: boolean;
  feedback: boolean;
  taskset: boolean;
  runs: boolean;
  /** start / stop / resume / evaluate: false until the coordinator provides a RunController. */
  runControl: boolean;
}

// ---------------------------------------------------------------- requests (client -> server)

export interface Requests {
  'server/hello': {
    params: { clientVersion: string; workspace?: string };
    result: { serverVersion: string; pid: number; capabilities: ServerCapabilities };
  };
  'server/shutdown': { params: Record<string, never>; result: null };
  'server/engine': { params: Record<string, never>; result: EngineSummary };

  'buffer/open': { params: BufferRef; result: { path: string; counts: BufferCounts } };
  'buffer/list': {
    params: {
      buffer?: BufferRef;
      filter?: ExperienceFilter;
      sort?: ExperienceSortKey;
      descending?: boolean;
      /** Default 0. */
      offset?: number;
      limit: number;
    };
    result: { total: number; rows: ExperienceSummary[] };
  };
  'buffer/counts': { params: { buffer?: BufferRef }; result: BufferCounts };
  'buffer/get': { params: { buffer?: BufferRef; id: string }; result: ExperienceDetail | null };
  'buffer/group': { params: { buffer?: BufferRef; groupId: string }; result: Experience[] };
  /** Per-task results of one run's usual experiences (the taskset CodeLens): rollouts, mean reward, full-reward fraction. */
  'buffer/taskStats': { params: { buffer?: BufferRef; runId?: string }; result: TaskStats[] };
  /** Tasks a run synthesized (newest last, at most `limit`, default 200), with the count per origin. */
  'buffer/synthesized': {
    params: { buffer?: BufferRef; runId: string; limit?: number };
    result: { total: number; byOrigin: Record<string, number>; tasks: SynthesizedTask[] };
  };
  /** A run's taskset tasks as the buffer holds them (in taskset order, at most `limit`, default 1000): id and prompt. */
  'buffer/tasks': {
    params: { buffer?: BufferRef; runId: string; limit?: number };
    result: { total: number; tasks: { id: string; prompt: string }[] };
  };
  /** The preference pairs a run's buffer makes now, per origin (curation, rating, long2short): Train DPO's count. */
  'buffer/pairs': {
    params: { buffer?: BufferRef; runId: string };
    result: { total: number; byOrigin: Record<string, number> };
  };
  'buffer/export': {
    params: { buffer?: BufferRef; file: string; filter?: ExperienceFilter };
    result: { file: string; written: number };
  };

  'feedback/rate': {
    params: { buffer?: BufferRef; id: string; rating: number; note?: string };
    result: FeedbackChange;
  };
  'feedback/promote': {
    params: { buffer?: BufferRef; id: string; editedResponse?: string };
    result: FeedbackChange & { expertId: string };
  };
  'feedback/reject': { params: { buffer?: BufferRef; id: string; note?: string }; result: FeedbackChange };
  'feedback/addExpert': {
    params: { buffer?: BufferRef; taskId: string; prompt: string; response: string; runId?: string };
    result: FeedbackChange & { expertId: string };
  };
  'feedback/bulkPromote': {
    params: { buffer?: BufferRef; topK: number; filter?: ExperienceFilter };
    result: FeedbackChange;
  };
  /** The same selection as bulkPromote, counted, nothing changed. */
  'feedback/bulkPreview': {
    params: { buffer?: BufferRef; topK: number; filter?: ExperienceFilter };
    result: BulkPreview;
  };
  'feedback/undo': { params: { buffer?: BufferRef; changeId?: string }; result: { undone: FeedbackChange | null } };

  /** `reading`: how a run config reads the file (its `format:` field names, expert role, domain), so a file with foreign names validates as the run loads it. */
  'taskset/validate': { params: { file: string; text?: string; reading?: TasksetReading }; result: TasksetReport };
  'taskset/watch': { params: { files: string[] }; result: { watching: number } };

  'runs/list': { params: Record<string, never>; result: RunInfo[] };
  'runs/status': { params: { runId: string }; result: RunInfo & { components?: ComponentState[]; config?: unknown } };
  'runs/start': { params: { configPath: string }; result: RunInfo };
  'runs/stop': { params: { runId: string }; result: RunInfo };
  /** config: 'new' resumes with the config file as it is now, 'kept' with the one the run started with (needed when it changed). */
  'runs/resume': { params: { runId: string; config?: 'new' | 'kept' }; result: RunInfo };
  /** Ends the run after its current step with a checkpoint, recorded as paused (Resume continues it). */
  'runs/pause': { params: { runId: string }; result: RunInfo };
  /**
   * taskset '' = the run's held-out split; runId (default: the run that owns the checkpoint) supplies
   * reward and taskset. config (a workspace `*.rft.yaml`) wins: its eval set (taskset ''), or the
   * taskset file read with its `format:` mapping, and its reward. format: how to read a taskset file
   * that no section of the config names (the editor's reading of it), instead of the config's mapping.
   */
  'runs/evaluate': {
    params: { checkpoint: string; taskset: string; runId?: string; config?: string; format?: Record<string, string> };
    result: { accuracy: number; tasks: number };
  };
  'runs/metrics': { params: { runId: string; sinceStep?: number }; result: MetricsPoint[] };
  /** The run's log file and its last `lines` lines (default 20). */
  'runs/log': { params: { runId: string; lines?: number }; result: { path: string; lines: string[] } };
  /**
   * A run config (`*.rft.yaml`) checked against the schema, and the files it names; `text` is the
   * unsaved editor text. `deep`: also what `rft run --check` refuses (registry names), for the saved file.
   */
  'config/validate': { params: { file: string; text?: string; deep?: boolean }; result: { issues: ConfigIssueAt[] } };
  /** Distributed runs: every worker (from its heartbeats) and the job queue's counts by state. */
  'workers/list': {
    params: { buffer: string; runId: string };
    /** trainerLost: the run is not done and its trainer stopped or went silent ("trainer lost N s ago (last heartbeat …)"). */
    result: { jobs: Record<string, number>; workers: WorkerInfo[]; trainerLost?: string | null };
  };

  /** What `rft model info` says of a model folder (an HF folder or HF-cache entry the user picked may be outside the workspace). */
  'models/info': { params: { dir: string }; result: ModelInfo };
  /** Model folders in the Hugging Face cache (HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub): one per snapshot with a config.json. */
  'models/cache': { params: Record<string, never>; result: { roots: string[]; models: CachedModel[] } };
  /** Datasets in the Hugging Face cache (datasets--ORG--NAME, the snapshot refs/main names): their splits and rows. */
  'datasets/cache': { params: Record<string, never>; result: { roots: string[]; datasets: CachedDataset[] } };
  /**
   * A dataset folder (hub cache entry, a folder of split files; may be outside the workspace, read only):
   * its splits, and the columns and first records of `split` (default: train, else its only split).
   */
  'datasets/preview': { params: { dir: string; split?: string }; result: DatasetPreview };
  /** The workspace's imported models (`.rft/models.json`). */
  'models/list': { params: Record<string, never>; result: ImportedModel[] };
  /** Checks a model folder as `rft model info` does (an unsupported architecture is refused by name) and remembers it. */
  'models/import': { params: { dir: string }; result: ImportedModel };
  'models/remove': { params: { dir: string }; result: { removed: boolean } };
  /** `rft model export`: checkpoint and out inside the workspace; dtype f16 for gguf only. */
  /** force: replace the files the export writes in a non-empty `out` (other files are kept); a file at `out` is always refused. */
  'models/export': {
    params: { checkpoint: string; format: 'hf' | 'peft' | 'gguf'; out: string; dtype?: 'f32' | 'f16'; force?: boolean };
    result: { format: string; out: string; dtype: string };
  };
  /** A serve run's endpoint (mode serve, from its serve.json): null until the run is serving. */
  'serve/info': { params: { runId: string }; result: ServeInfo | null };
  /** The episodes a serve run has answered and not yet got a reward for (GET /v1/rft/episodes), as conversations. */
  'serve/episodes': { params: { runId: string }; result: { runId: string; episodes: ServedEpisode[] } };
  /** A person's reward for one served episode, posted as POST /v1/rft/rewards posts it; a refusal (already rewarded) is answered, not thrown. */
  'serve/reward': { params: { runId: string; episodeId: string; reward: number }; result: ServedRewardResult };
  /** `rft reward-model train` on a run's curated pairs and ratings (out inside the workspace); progress as `rewardModel/progress`. */
  'rewardModel/train': { params: { runId: string; out: string; steps?: number }; result: RewardModelReport };
}

// ---------------------------------------------------------------- notifications (server -> client)

export interface Notifications {
  'log/line': {
    level: 'debug' | 'info' | 'warn' | 'error';
    scope: string;
    msg: string;
    fields?: Record<string, unknown>;
  };
  'buffer/changed': { path: string; counts: BufferCounts };
  'taskset/report': TasksetReport;
  'run/status': RunInfo & { components?: ComponentState[] };
  'run/metrics': MetricsPoint;
  /** A line of `rft reward-model train`'s progress; step / steps / loss on training lines. */
  'rewardModel/progress': { runId: string; line: string; step?: number; steps?: number; loss?: number };
}

export type RequestMethod = keyof Requests;
export type NotificationMethod = keyof Notifications;
export type ParamsOf<M extends RequestMethod> = Requests[M]['params'];
export type ResultOf<M extends RequestMethod> = Requests[M]['result'];

/** JSON-RPC error codes the server uses (application range). */
export const ErrorCodes = {
  /** The request is valid but that part of the backend is not there yet (e.g. run control before the coordinator). */
  NotAvailable: -32001,
  /** Bad input: message names the file / line / field. */
  InvalidInput: -32002,
  NotFound: -32004,
  /** Nothing left to undo, or a change that can no longer be undone. */
  Conflict: -32009,
  /** A TCP connection whose first request was not `server/auth` with the server's token. */
  Unauthorized: -32003,
  /** A path in a request that resolves outside the workspace (or the run folder), or a file that is not this project's. */
  Forbidden: -32005,
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

export const PROTOCOL_VERSION = '1';
