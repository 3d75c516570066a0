// Reads a number the way people and models write one: `1,234.5`, `-3/4`, `\frac{3}{4}`, `1 1/2`,
// `$12`, `1.5e3`. Exact (Rational), so `1/2` equals `0.5` and `0.1+0.2`-style rounding never matters.
import { parseDecimal, Rational } from './rational.js';

/** Answer texts longer than this are not numbers (bounds work on hostile input). */
const MAX_NUMBER_TEXT = 300;

/** `1,234,567.89`: commas only as thousands separators in groups of three. */
function parseGrouped(s: string): Rational | null {
  if (!/^[+-]?\d{1,3}(?:,\d{3})+(?:\.\d+)?$/.test(s)) return parseDecimal(s);
  return parseDecimal(s.replace(/,/g, ''));
}

/** Strips wrappers that do not change a number: `$`, `\$`, LaTeX spacing, `{}`, a final period. */
export function cleanNumberText(s: string): string {
  let t = s.trim();
  t = t
    .replace(/\\[,;:! ]/g, '')
    .replace(/\\(?:left|right)\b/g, '')
    .replace(/\\?\$/g, '');
  t = t.replace(/\\text\{\s*\}/g, '').replace(/\{,\}/g, ',');
  t = t.replace(/[.。]+$/, '').trim();
  // `{3}` -> `3` (a lone braced group), `(3)` -> `3`
  for (let i = 0; i < 3; i++) {
    const m = /^\{([^{}]*)\}$/.exec(t) ?? /^\(([^()]*)\)$/.exec(t);
    if (!m) break;
    t = m[1]!.trim();
  }
  return t.replace(/\u2212/g, '-'); // unicode minus
}

/** Parses a number text exactly; null when it is not (only) a number. */
export function parseNumber(text: string): Rational | null {
  if (text.length > MAX_NUMBER_TEXT) return null;
  const s = cleanNumberText(text);
  if (s === '') return null;
  const plain = parseGrouped(s);
  if (plain) return plain;
  // \frac{a}{b}, \dfrac{a}{b}, \tfrac{a}{b}, with an optional sign in front
  let m = /^([+-]?)\\[dt]?frac\{\s*([^{}]+?)\s*\}\{\s*([^{}]+?)\s*\}$/.exec(s);
  if (m) return fraction(m[1]!, m[2]!, m[3]!);
  // a/b, -a/b, a / b
  m = /^([+-]?)\s*([^/\s]+)\s*\/\s*([^/\s]+)$/.exec(s);
  if (m) return fraction(m[1]!, m[2]!, m[3]!);
  // mixed number: 1 1/2, -2 3/4
  m = /^([+-]?)(\d+)\s+(\d+)\s*\/\s*(\d+)$/.exec(s);
  if (m) {
    const whole = parseDecimal(m[2]!);
    const frac = fraction('', m[3]!, m[4]!);
    if (!whole || !frac) return null;
    const v = whole.add(frac);
    return m[1] === '-' ? v.neg() : v;
  }
  return null;
}

function fraction(sign: string, a: string, b: string): Rational | null {
  const n = parseGrouped(a.trim());
  const d = parseGrouped(b.trim());
  if (!n || !d || d.num === 0n) return null;
  const v = n.div(d);
  return sign === '-' ? v.neg() : v;
}

/**
 * Whether a response number equals the reference. Exact, except that a decimal written with at
 * least 3 places is accepted for a reference with no finite decimal expansion (1/3 ~ 0.333) when
 * it is that reference correctly rounded to the places written.
 */
export function numbersMatch(reference: Rational, response: Rational, responseText: string): boolean {
  if (reference.equals(response)) return true;
  if (reference.terminates()) return false;
  const m = /\.(\d+)$/.exec(cleanNumberText(responseText));
  const places = m ? m[1]!.length : 0;
  if (places < 3) return false;
  // |response - reference| <= 0.5 * 10^-places
  const diff = response.sub(reference);
  const abs = diff.num < 0n ? diff.neg() : diff;
  return abs.compare(new Rational(1n, 2n * 10n ** BigInt(places))) <= 0;
}
