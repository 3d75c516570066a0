// Shapes shared by the taskset loaders, the validator, the watcher and the CLI.
import type { Domain, Task } from '../../core/types.js';
import type { FieldMapping, RecordRole } from './fields.js';

/** One bad record: where it is and what is wrong, rendered as `FILE:LINE: field 'X': message`. */
export interface TaskRecordError {
  file: string;
  /** 1-based line where the record starts. */
  line: number;
  field: string;
  message: string;
}

import type { TasksetFormat } from '../../core/taskset-text/index.js';

// The readers' shapes live with them in core (the extension reads files with them too).
export type { TasksetFormat } from '../../core/taskset-text/index.js';

export interface LoadOptions {
  /** Domain of records without a `domain` field (default 'math'). */
  domain?: Domain;
  /** Name stored in `Task.taskset` (default: the file path). */
  taskset?: string;
  /** Force a format instead of choosing by file extension. */
  format?: TasksetFormat;
  /** Rename the file's own field names to the schema's (`format:` of a run config). */
  fields?: FieldMapping;
  /** 'expert': each record is a demonstration and needs a response (default 'task'). */
  role?: RecordRole;
  /** Records without an id get `L<line>` (data from elsewhere rarely has ids). */
  defaultIds?: boolean;
  /** A dataset folder's split to read (`train`, `CONFIG/train`); refused for a single file. */
  split?: string;
  /** A dataset folder without `split`: the first of these it has (default ['train']). */
  defaultSplits?: string[];
}

export interface LoadResult {
  file: string;
  /** Valid tasks, in file order. */
  tasks: Task[];
  /** Line where each task starts (a columnar file's row), same order as `tasks`. */
  lines: number[];
  /** The file of each task, when the taskset is several files (a dataset's shards). */
  recordFiles?: string[];
  errors: TaskRecordError[];
  /** A column of the user's own named like a schema field (kept in metadata): one per column, at its first line. */
  warnings?: TaskRecordError[];
  /** Records seen (valid + invalid). */
  records: number;
  /** What was read differently from the file and why (integers beyond 2^53 kept as text). */
  notes?: string[];
}
