export * from './types.js';
export { makeSelector, taskSelectors } from './registry.js';
