// Public surface of the buffer samplers.
export * from './types.js';
export { samplers, makeSampler } from './registry.js';
export { FifoSampler } from './fifo.js';
export { PrioritySampler } from './priority.js';
export { ExpertSampler } from './expert.js';
export { MixedSampler, expertShare } from './mixed.js';
export { FreshSampler } from './fresh.js';
