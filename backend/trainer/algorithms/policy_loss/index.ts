// Policy losses: importing this module registers every unit.
import './ppo.js';
import './sft.js';
import './mix.js';
import './chord.js';
import './opmd.js';
import './dpo.js';

export { policyLosses } from './registry.js';
export { PPO_DEFAULTS, type PpoParams } from './ppo.js';
export { SFT_DEFAULTS, type SftParams } from './sft.js';
export { MIX_DEFAULTS, type MixParams } from './mix.js';
export { CHORD_DEFAULTS, chordMu, phiWeight, type ChordParams } from './chord.js';
export { OPMD_LOSS_DEFAULTS, type OpmdLossParams } from './opmd.js';
export { DPO_DEFAULTS, type DpoParams } from './dpo.js';
