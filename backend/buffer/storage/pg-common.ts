// Small pieces the PostgreSQL store's files share: the placeholder style, the row type, the
// all-or-nothing take's signal, and text made storable.
import type { Placeholder } from './sql.js';

export const ph: Placeholder = (i) => `$${i}`;
export type Row = Record<string, unknown>;

/** A take found fewer rows than it needs: the transaction rolls back, nothing is taken. */
export class NotEnough extends Error {}

/**
 * PostgreSQL text cannot hold U+0000, which a small model does sample: text columns get U+FFFD in
 * its place (the tokens, stored exactly in the binary column, keep the truth; SQLite keeps it as is).
 */
export function pgSafeText<R extends object>(r: R): R {
  const out = { ...r } as Record<string, unknown>;
  for (const [k, v] of Object.entries(out))
    if (typeof v === 'string' && v.includes('\u0000')) out[k] = v.replace(/\u0000/g, '\uFFFD');
  return out as unknown as R;
}
