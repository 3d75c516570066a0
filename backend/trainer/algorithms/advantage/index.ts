// Advantage functions: importing this module registers every unit.
import './grpo.js';
import './rloo.js';
import './opmd.js';
import './reinforce_pp.js';
import './gae.js';

export { advantageFns } from './registry.js';
