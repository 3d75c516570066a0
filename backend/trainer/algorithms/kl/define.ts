// defineKl: a KL estimator unit, typed (the map of units by name is ./registry.ts).
import type { KlFn } from './types.js';

export function defineKl(fn: KlFn): KlFn {
  return fn;
}
