// Public surface of the buffer storage.
export * from './types.js';
export { openStore, resolveBufferUrl, schemeOf, storages, RUN_BUFFER_FILE } from './registry.js';
export { parseExperience } from './validate.js';
export { SqliteStore } from './sqlite.js';
export { PostgresStore } from './postgres.js';
