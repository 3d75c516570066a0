// KL estimators: the registry of units (./registry.ts), the KL loss term and the reward penalty.
export { klFns } from './registry.js';
export { klLoss } from './loss.js';
export { applyKlPenalty } from './penalty.js';
