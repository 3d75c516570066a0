// Task pipeline operators by name; a new operator is one file plus one entry in the map below.
import { Registry } from '../../../core/registry.js';
import { dedupe } from './dedupe.js';
import { difficulty } from './difficulty.js';
import { formatFilter } from './format-filter.js';
import { lengthFilter } from './length-filter.js';
import type { OperatorSpec } from './operator-spec.js';
import { priorityWeights } from './priority-weights.js';
import { synthesize } from './synthesize.js';
import { topK } from './top-k.js';
import type { TaskOperator, TaskPipelineDeps } from './types.js';

export const taskOperators = new Registry<OperatorSpec<TaskOperator, TaskPipelineDeps>>('task pipeline operator', {
  dedupe: dedupe,
  length_filter: lengthFilter,
  format_filter: formatFilter,
  difficulty: difficulty,
  priority_weights: priorityWeights,
  top_k: topK,
  synthesize: synthesize,
});
