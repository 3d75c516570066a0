// KL estimators: importing this module registers every unit.
import './k1.js';
import './k2.js';
import './k3.js';
import './low_var.js';
import './abs.js';
import './corrected_k3.js';

export { klFns } from './registry.js';
export { klLoss } from './loss.js';
export { applyKlPenalty } from './penalty.js';
