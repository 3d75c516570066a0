// Tasksets: loading and validating files, watching them, and choosing tasks.
export * from './types.js';
export { formatTaskError, loadTaskset, parseTaskset, parseTasksetBytes } from './load.js';
export { watchTaskset, type TasksetChange, type TasksetWatcher } from './watch.js';
export * from './selectors/index.js';
