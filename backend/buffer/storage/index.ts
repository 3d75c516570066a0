// Public surface of the buffer storage.
export * from './types.js';
export { openStore, resolveBufferUrl, schemeOf, storages } from './registry.js';
export { SqliteStore } from './sqlite.js';
