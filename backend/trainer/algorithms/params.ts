// Parameter handling shared by every unit: defaults filled in, snake_case accepted (configs written
// for the reference framework), null meaning "not set", and unknown names rejected by name.
import { InputError } from '../../core/errors.js';

export function toCamel(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/**
 * Merge `given` over `defaults`. Keys may be snake_case or camelCase; null/undefined keep the default.
 * Throws naming the unit and the unknown key, so a typo in a config never passes silently.
 */
export function resolveParams<P extends object>(
  kind: string,
  name: string,
  defaults: P,
  given?: Partial<P> | Record<string, unknown>,
): P {
  const out = { ...defaults } as Record<string, unknown>;
  if (!given) return out as P;
  for (const [rawKey, value] of Object.entries(given)) {
    const key = toCamel(rawKey);
    if (!(key in out)) {
      throw new InputError(
        `${kind} '${name}': unknown parameter '${rawKey}'; known: ${Object.keys(defaults).join(', ') || '(none)'}`,
      );
    }
    if (value === null || value === undefined) continue;
    const def = (defaults as Record<string, unknown>)[key];
    if (def !== undefined && def !== null && typeof def !== typeof value) {
      throw new InputError(
        `${kind} '${name}': parameter '${rawKey}' must be a ${typeof def}, got ${JSON.stringify(value)}`,
      );
    }
    out[key] = value;
  }
  return out as P;
}
