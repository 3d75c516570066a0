// Policy losses: importing this module registers every unit.
import './ppo.js';
import './sft.js';
import './mix.js';
import './chord.js';
import './opmd.js';
import './dpo.js';

export { policyLosses } from './registry.js';
export { chordMu, phiWeight } from './chord.js';
