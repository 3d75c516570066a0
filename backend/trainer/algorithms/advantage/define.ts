// defineAdvantage: an advantage-function unit with its own parameter type (the map of units by
// name is ./registry.ts).
import type { AdvantageFn } from './types.js';

export function defineAdvantage<P extends object>(fn: AdvantageFn<P>): AdvantageFn<P> {
  return fn;
}
