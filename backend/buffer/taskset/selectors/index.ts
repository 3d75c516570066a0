// Task selectors (which task comes next): the registry by name, makeSelector, and their types.
export * from './types.js';
export { makeSelector, taskSelectors } from './registry.js';
