// The experience pipeline: its operators by name (./registry.ts), the pipeline that runs them, and their types.
export * from './types.js';
export { DEFAULT_EXPERIENCE_PIPELINE, ExperiencePipeline } from './pipeline.js';
