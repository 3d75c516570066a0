export * from './types.js';
export { DEFAULT_EXPERIENCE_PIPELINE, ExperiencePipeline } from './pipeline.js';
