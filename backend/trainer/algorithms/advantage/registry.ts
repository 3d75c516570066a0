// Registry of advantage functions: one file per unit plus one entry in the map below.
import { Registry } from '../../../core/registry.js';
import { gaeAdvantage } from './gae.js';
import { grpoAdvantage } from './grpo.js';
import { opmdAdvantage } from './opmd.js';
import { reinforcePpAdvantage } from './reinforce_pp.js';
import { rlooAdvantage } from './rloo.js';
import type { AdvantageFn } from './types.js';

/** Each unit keeps its own parameter type; the registry holds them by the common signature. */
const erase = <P extends object>(fn: AdvantageFn<P>): AdvantageFn => fn as unknown as AdvantageFn;

const builtinAdvantages = {
  grpo: erase(grpoAdvantage),
  rloo: erase(rlooAdvantage),
  opmd: erase(opmdAdvantage),
  'reinforce++': erase(reinforcePpAdvantage),
  gae: erase(gaeAdvantage),
} as const satisfies Record<string, AdvantageFn>;

export const advantageFns = new Registry<AdvantageFn>('advantage function', builtinAdvantages);
