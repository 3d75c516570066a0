// Typed JSON-RPC protocol between the VS Code extension (src/) and the backend (`rft serve`).
// The extension imports only the TYPES from here; method names are string literal keys of the
// maps below, so a typo or a wrong param shape is a compile error on both sides.
import type { Domain, Experience, ExperienceSource, ExperienceStatus, Feedback } from './types.js';

// ---------------------------------------------------------------- shared shapes

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

export interface TasksetIssue {
  file: string;
  /** 1-based line of the bad record (JSONL / CSV line; JSON / YAML: line where the record starts). */
  line?: number;
  field?: string;
  message: string;
  severity: 'error' | 'warning';
}

export interface TasksetReport {
  file: string;
  tasks: number;
  issues: TasksetIssue[];
}

/** How a run config reads a taskset file: `format:` (prompt_key, response_key, ...), role and domain. */
export interface TasksetReading {
  format?: Record<string, string>;
  role?: 'task' | 'expert';
  domain?: Domain;
}

/** Same values as the run registry (backend/buffer/runs.ts). */
export type RunStatus = 'created' | 'running' | 'paused' | 'stopped' | 'completed' | 'failed';

export interface RunInfo {
  id: string;
  name?: string;
  status: RunStatus;
  step?: number;
  totalSteps?: number;
  reward?: number;
  configPath?: string;
  bufferPath?: string;
  createdAt?: number;
  updatedAt?: number;
  checkpoints?: { version: number; path: string; step?: number }[];
  /** Why the run is in its status (a failed run's error), from the registry. */
  statusReason?: string;
  /**
   * Whether resuming it can succeed (coordinator/resume-state.ts): false for a run refused on its
   * config or data while its config file is unchanged (the same config is refused again).
   */
  resumable?: boolean;
  /** Why a resume would be refused, with its one fix. */
  resumeRefusal?: string;
  /** The run's config file, when its text changed since the run took it: a resume asks whether to use it. */
  configChanged?: string;
  /** The run's HTML report (learning curves, summary), once written. */
  reportPath?: string;
  /** The folder of the run's TensorBoard event files (monitor.tensorboard), once one is written. */
  tensorboardDir?: string;
  /** The model the run trains, as its config resolves it (a model.checkpoint's own architecture, not the preset defaults). */
  model?: RunModelInfo;
  /** What the run computes on, from its metrics (runs/status only: the list does not read every run's metrics). */
  engines?: RunEngines;
}

/**
 * The engines a run uses, as its processes recorded them in metrics.jsonl (coordinator/monitor.ts
 * runEngines); each absent until recorded (the rollout engine from the first explore step on).
 */
export interface RunEngines {
  /** The tensor engine that trains (and samples natively): "webgpu: nvidia hopper (NVIDIA H200)", "wasm + native BLAS"; "trainer: … · explorer: …" where they differ. */
  tensor?: string;
  /** What samples the rollouts: "native (in process)", "native (4 worker threads)", "llama.cpp cuda: NVIDIA H200", "auto (…)". */
  rollout?: string;
}

/** What a run trains: `model.checkpoint` read from its config.json, else the `model.size` preset. */
export interface RunModelInfo {
  source: 'checkpoint' | 'preset';
  /** One line for views: `Qwen2ForCausalLM · 494M parameters · LoRA rank 8 · from Qwen/Qwen2-0.5B`. */
  label: string;
  /** HF architecture (checkpoint) or preset name. */
  architecture: string;
  /** Parameter count of a checkpoint (a preset's depends on the tokenizer trained at the start). */
  parameters?: number;
  /** LoRA rank (model.lora), absent for full fine-tuning. */
  loraRank?: number;
  /** Hidden size of a checkpoint (a pretrained model's default lr scales with it). */
  hidden?: number;
  /** Where the weights come from (org/name for a Hugging Face cache entry). */
  from?: string;
  /** `the model's own` for a checkpoint with tokenizer.json, else the config's tokenizer. */
  tokenizer: string;
  /** The checkpoint could not be read (the run will say so at start). */
  problem?: string;
}

/** A config file's problems, each at the line of its key where it can be found. */
export interface ConfigIssueAt {
  line?: number;
  field: string;
  message: string;
  /** A problem that does not stop a run (a renamed key's old spelling); unset: an error. */
  severity?: 'warning';
}

export interface ComponentState {
  name: 'explorer' | 'trainer' | 'synchronizer' | string;
  state: 'idle' | 'waiting' | 'generating' | 'training' | 'syncing' | 'stopped' | string;
  idleFraction?: number;
}

export interface MetricsPoint {
  runId: string;
  step: number;
  at: number;
  /** reward, eval_accuracy, loss/*, kl, entropy, tokens_per_s, idle/explorer, idle/trainer ... */
  values: Record<string, number>;
  /** The stage (of a multi-stage config) the step belongs to. */
  stage?: string;
  /** What the run warned of at this step (metrics.jsonl `warning` records). */
  warnings?: RunWarning[];
  /**
   * Trainer steps done once this point's training step ended (its `model_version`), on a point with a
   * train record. "step N" everywhere (Runs view, status bar, dashboard, notifications) is this count,
   * the checkpoint version: the point's `step` is 0-based for training and exploring, and an eval's is
   * the version it evaluated, so newest `step` + 1 said 51 for `steps: 50`.
   */
  trained?: number;
}

/**
 * Something a run noticed and said (log, metrics.jsonl `kind: warning`, summary.json `warnings`,
 * report, dashboard) without stopping. `policy_collapse` (trainer/collapse-guard.ts): KL to the
 * reference, rollout reward and sampled entropy against their start; the likely cause is the lr.
 * `eval_no_result` (coordinator/run-loop.ts): an evaluation scored no answer (every one an
 * infrastructure failure), so it has no accuracy. `run_stalled` (trainer/stall-guard.ts): the reward
 * stays flat while the updates keep changing the policy; with the share of zero-variance groups.
 */
export interface RunWarning {
  code: 'policy_collapse' | 'eval_no_result' | 'run_stalled' | 'no_trainable_rollout';
  /** The trainer step it was noticed at. */
  step: number;
  stage?: string;
  /** One line with the numbers and the likely cause. */
  message: string;
  /** The numbers behind it (now and at the stage's start), e.g. ref_kl, start_ref_kl, batch_reward, lr. */
  values: Record<string, number>;
}

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

/** What `rft reward-model train` reports (backend/cli/commands/reward-model.ts). */
export interface RewardModelReport {
  out: string;
  tasks: number;
  train_pairs: number;
  train_ratings: number;
  /** Tasks whose pairs chose the kept step and the threshold (never trained on). */
  validation_tasks: number;
  validation_pairs: number;
  /** Pairwise accuracy of the kept weights on the validation pairs; null without validation pairs. */
  validation_accuracy: number | null;
  /** The training step whose weights were saved (the best validation accuracy). */
  best_step: number;
  heldout_tasks: number;
  heldout_pairs: number;
  /** Share of held-out pairs scored chosen > rejected (ties half); null when nothing is held out. */
  heldout_accuracy: number | null;
  /** Binomial standard error of heldout_accuracy. */
  heldout_stderr: number | null;
  /**
   * Baselines on the same held-out pairs: response length (its direction fitted on the training
   * pairs), and with --init the policy's mean log-prob per answer token. Empty when nothing is held out.
   */
  baselines: { name: string; heldout_accuracy: number }[];
  /** Raw score at and above which an answer is judged correct (fitted on the validation pairs); the reward is sigmoid(score - threshold). */
  threshold: number;
  /** Held-out answers on the right side of the threshold (chosen at or above, rejected below). */
  heldout_judged_accuracy: number | null;
  train_accuracy: number;
  final_loss: number;
}

/** `rft model info DIR` as JSON (backend/cli/commands/model.ts). */
export interface ModelInfo {
  dir: string;
  architecture: string;
  parameters: number;
  /** Weight dtypes in the files, e.g. `BF16` or `F32,BF16`. */
  dtype: string;
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  vocab: number;
  maxSeqLen: number;
  tiedEmbeddings: boolean;
  tokenizer: { kind: string; vocab: number; bos?: number; eos?: number; pad?: number } | null;
  /** The chat template's text (HF), `rft` for this project's own layout, null without a tokenizer. */
  chatTemplate: string | null;
  /** A LoRA checkpoint's adapters. */
  lora: { rank: number; alpha?: number; target_modules?: string[]; adapterParameters: number } | null;
}

export interface ImportedModel extends ModelInfo {
  /** `org/name` for an HF-cache entry, else the folder's name. */
  name: string;
  importedAt: number;
}

export interface CachedModel {
  /** `org/name` */
  repo: string;
  revision: string;
  /** The snapshot folder. */
  dir: string;
}

export interface DatasetSplit {
  /** `train`, or `CONFIG/train` where several configs have it (what a config's `split:` says). */
  name: string;
  files: number;
  /** Rows of its Parquet files (from their footers); undefined when a file is of another format. */
  rows?: number;
}

export interface CachedDataset {
  /** `org/name` */
  repo: string;
  /** The cache entry (datasets--ORG--NAME): a config's `path`. */
  dir: string;
  splits: DatasetSplit[];
}

export interface DatasetPreview {
  dir: string;
  splits: DatasetSplit[];
  split: string;
  /** Top-level columns of the split's first file and their types. */
  columns: { name: string; type: string }[];
  /** Its first records (binary values as `<N bytes>`). */
  records: Record<string, unknown>[];
}

/** One worker of a distributed run, as its last heartbeat left it. */
export interface WorkerInfo {
  id: string;
  host: string;
  pid: number;
  role: string;
  state: string;
  detail: string | null;
  modelVersion: number | null;
  /** Experiences acknowledged (explorer) or steps trained (trainer). */
  done: number;
  /** Per second: experiences (explorer, last 30 s) or steps (trainer). */
  throughput: number;
  startedAt: number;
  lastHeartbeat: number;
  /** Seconds since the last heartbeat by the database's clock. */
  ageS: number;
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
