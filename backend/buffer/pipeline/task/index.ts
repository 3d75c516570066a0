export * from './types.js';
export { TaskPipeline, type TaskPipelineResult } from './pipeline.js';
export { taskOperators } from './registry.js';
export { PipelineConfigError, type OperatorSpec, type PipelineIssue } from './operator-spec.js';
export {
  TaskSynthesizer,
  findSynthStep,
  isSynthesized,
  type Proposer,
  type ReferenceScore,
  type SynthCounts,
  type SynthParams,
  type TaskProposal,
} from './synthesize.js';
