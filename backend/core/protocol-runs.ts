// The protocol's run shapes (backend/core/protocol.ts maps the methods to them): a run as the registry
// and its config describe it, the model and engines it uses, its components' activity, its metrics and
// warnings, and the workers of a distributed run.

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
