// Task pipeline: operators that filter, dedupe, score and weight tasks before the explorer sees them.
import type { Task } from '../../../core/types.js';

/** Pass counts of a task from earlier rollouts (for difficulty scoring). */
export interface PassCount {
  passes: number;
  attempts: number;
}

export interface TaskPipelineContext {
  /** Observed pass counts by task id. */
  passRates?: Map<string, PassCount>;
}

export interface TaskOperator {
  apply(tasks: Task[], ctx: TaskPipelineContext): Task[];
}

export interface TaskPipelineDeps {
  /** Token count of a text; needed by length_filter's min_tokens / max_tokens. */
  countTokens?: (text: string) => number;
}

export interface TaskStepMetric {
  name: string;
  in: number;
  out: number;
}
