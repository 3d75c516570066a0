// Registry of KL estimators: one file per estimator plus one entry in the map below.
import { Registry } from '../../../core/registry.js';
import { absKl } from './abs.js';
import { correctedK3 } from './corrected_k3.js';
import { k1 } from './k1.js';
import { k2 } from './k2.js';
import { k3 } from './k3.js';
import { lowVar } from './low_var.js';
import type { KlFn } from './types.js';

const builtinKl = {
  k1,
  k2,
  k3,
  low_var_kl: lowVar,
  abs: absKl,
  corrected_k3: correctedK3,
} as const satisfies Record<string, KlFn>;

export const klFns = new Registry<KlFn>('kl function', builtinKl);
