// Public surface of the buffer samplers.
export * from './types.js';
export { samplers, makeSampler } from './registry.js';
export { expertShare } from './mixed.js';
