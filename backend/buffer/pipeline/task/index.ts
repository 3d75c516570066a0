// The task pipeline: its operators by name (./registry.ts), the pipeline that runs them, and its
// config error.
export * from './types.js';
export { TaskPipeline } from './pipeline.js';
export { taskOperators } from './registry.js';
export { PipelineConfigError } from './operator-spec.js';
