// Registry of KL estimators: one file per estimator (and one import line in ./index.ts).
import { Registry } from '../../../core/registry.js';
import type { KlFn } from './types.js';

export const klFns = new Registry<KlFn>('kl function');

export function defineKl(fn: KlFn): KlFn {
  return klFns.register(fn.name, fn);
}
