// Advantage functions: the registry of units (the map is in ./registry.ts).
export { advantageFns } from './registry.js';
