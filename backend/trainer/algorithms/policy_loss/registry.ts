// Registry of policy losses: one file per unit plus one entry in the map below. All share the call
// signature (inputs, params) => LossResult.
import { Registry } from '../../../core/registry.js';
import type { PolicyLossFn } from '../types.js';
import { chordLoss } from './chord.js';
import { dpoLoss } from './dpo.js';
import { mixLoss } from './mix.js';
import { opmdLoss } from './opmd.js';
import { ppoLoss } from './ppo.js';
import { sftLoss } from './sft.js';

/** Each unit keeps its own parameter type; the registry holds them by the common signature. */
const erase = <P extends object>(fn: PolicyLossFn<P>): PolicyLossFn => fn as unknown as PolicyLossFn;

const builtinPolicyLosses = {
  ppo: erase(ppoLoss),
  sft: erase(sftLoss),
  mix: erase(mixLoss),
  chord: erase(chordLoss),
  opmd: erase(opmdLoss),
  dpo: erase(dpoLoss),
} as const satisfies Record<string, PolicyLossFn>;

export const policyLosses = new Registry<PolicyLossFn>('policy loss', builtinPolicyLosses);
