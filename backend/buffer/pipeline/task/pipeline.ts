// Runs the configured task operators in order and reports how many tasks each one kept.
import type { Task } from '../../../core/types.js';
import { buildSteps, type BuiltStep } from './operator-spec.js';
import { taskOperators } from './registry.js';
import type { TaskOperator, TaskPipelineContext, TaskPipelineDeps, TaskStepMetric } from './types.js';

export interface TaskPipelineResult {
  tasks: Task[];
  metrics: TaskStepMetric[];
}

export class TaskPipeline {
  private constructor(private readonly steps: BuiltStep<TaskOperator>[]) {}

  /** `config`: e.g. `[{name: 'dedupe'}, {name: 'length_filter', max_chars: 400}]`; `path` names it in errors. */
  static fromConfig(config: unknown, deps: TaskPipelineDeps = {}, path = 'task_pipeline'): TaskPipeline {
    return new TaskPipeline(buildSteps(taskOperators, config, deps, path));
  }

  get names(): string[] {
    return this.steps.map((s) => s.name);
  }

  run(tasks: Task[], ctx: TaskPipelineContext = {}): TaskPipelineResult {
    const metrics: TaskStepMetric[] = [];
    let cur = tasks;
    for (const s of this.steps) {
      const before = cur.length;
      cur = s.op.apply(cur, ctx);
      metrics.push({ name: s.name, in: before, out: cur.length });
    }
    return { tasks: cur, metrics };
  }
}
