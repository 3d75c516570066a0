// Shapes of a run's options and summary, shared by runJob and the placements (type-only imports: no cycles).
import type { RunConfig } from '../core/config.js';
import type { RunWarning } from '../core/protocol.js';
export interface RunOptions {
  /** Required for a new run; a resumed run reads its config from the run registry. */
  config?: RunConfig;
  /** Continue this run from its last checkpoint and buffer position. */
  resume?: string;
  /** A resumed run's config: 'new' takes its config file as it is now, 'kept' the one it started with (resume-config.ts). */
  resumeConfig?: 'new' | 'kept';
  configPath?: string;
  /** Trainer steps between checkpoints (resume points). */
  checkpointEvery?: number;
  /** Folder that holds `.rft/runs/<id>/`. */
  workspace: string;
  runId?: string;
  /** Print a progress line on stderr. */
  progress?: boolean;
  signal?: AbortSignal;
  /** Load the config's workflow.file (workspace code); default: RFT_TRUST_WORKSPACE_CODE=1 in the environment. */
  trustWorkspaceCode?: boolean;
}

export interface RunSummary {
  run_id: string;
  run_dir: string;
  /** null: the run has no eval set (eval_set says why), or its eval scored no answer (base_no_result says why). */
  base_accuracy: number | null;
  /** null: no eval set, or no answer scored (final_no_result says why). */
  final_accuracy: number | null;
  /** Why base_accuracy is null although the run has an eval set: "no result: N infrastructure failure(s), first: …". */
  base_no_result?: string;
  final_no_result?: string;
  /** accuracy null: that evaluation scored no answer; infra_failures: answers left out of it. */
  evals: {
    stage: string;
    step: number;
    accuracy: number | null;
    mean_reward: number | null;
    infra_failures?: number;
    no_result?: string;
  }[];
  /** Where the eval set came from (a file, a generator, or a share held out of the taskset). */
  eval_set: string;
  trainer_steps: number;
  explore_steps: number;
  wall_seconds: number;
  report: string;
  checkpoint: string;
  /** What the run warned of (a policy collapse: trainer/collapse-guard.ts); empty when nothing. */
  warnings: RunWarning[];
  /** The run stopped by itself (no stop signal): why (its status is 'stopped', this its reason). */
  stop_reason?: string;
}
