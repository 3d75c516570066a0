// The reward functions: `rewardFns.get(name)` finds one (the map of built-ins is in ./registry.ts).
export { rewardFns } from './registry.js';
