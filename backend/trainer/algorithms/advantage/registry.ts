// Registry of advantage functions: each unit is one file that registers itself here
// (and one import line in ./index.ts).
import { Registry } from '../../../core/registry.js';
import type { AdvantageFn } from './types.js';

export const advantageFns = new Registry<AdvantageFn>('advantage function');

/** Register a unit and return it with its own parameter type. */
export function defineAdvantage<P extends object>(fn: AdvantageFn<P>): AdvantageFn<P> {
  advantageFns.register(fn.name, fn as unknown as AdvantageFn);
  return fn;
}
