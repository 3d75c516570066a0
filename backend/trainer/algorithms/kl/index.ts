// KL estimators: importing this module registers every unit.
import './k1.js';
import './k2.js';
import './k3.js';
import './low_var.js';
import './abs.js';
import './corrected_k3.js';

export { klFns } from './registry.js';
export type { KlFn } from './types.js';
export { klLoss, KL_LOSS_DEFAULTS, type KlLossParams, type KlInputs } from './loss.js';
export { applyKlPenalty, type KlPenaltyResult } from './penalty.js';
