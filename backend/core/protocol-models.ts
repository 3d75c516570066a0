// The protocol's model and dataset shapes (backend/core/protocol.ts maps the methods to them): a model
// folder as `rft model info` reads it, the workspace's imported models, the Hugging Face cache's models
// and datasets, a dataset's preview, and what `rft reward-model train` reports.

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
