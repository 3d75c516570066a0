// Tasksets: loading and validating files, watching them, and choosing tasks.
export * from './types.js';
export { formatOf, formatTaskError, loadTaskset, parseTaskset, parseTasksetBytes, TASKSET_EXTENSIONS } from './load.js';
export { checkRecord, DOMAINS } from './schema.js';
export { finalHashAnswer, mapRecord, MAPPING_KEYS, type FieldMapping, type RecordRole } from './fields.js';
export {
  diffTasks,
  taskHash,
  watchTaskset,
  type TasksetChange,
  type TasksetWatcher,
  type WatchOptions,
} from './watch.js';
export * from './selectors/index.js';
