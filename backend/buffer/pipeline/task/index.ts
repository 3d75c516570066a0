export * from './types.js';
export { TaskPipeline, type TaskPipelineResult } from './pipeline.js';
export { taskOperators } from './registry.js';
export { PipelineConfigError, type OperatorSpec, type PipelineIssue } from './operator-spec.js';
