// Policy losses: the registry of units (the map is in ./registry.ts).
export { policyLosses } from './registry.js';
export { chordMu, phiWeight } from './chord.js';
