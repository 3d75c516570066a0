// Exact rational numbers (BigInt numerator / positive denominator, always reduced), so that answer
// checks never depend on floating point: 7/2*2 is exactly 7 and 0.1 + 0.2 is exactly 3/10.
export class Rational {
  readonly num: bigint;
  readonly den: bigint;

  constructor(num: bigint, den = 1n) {
    if (den === 0n) throw new RangeError('division by zero');
    if (den < 0n) {
      num = -num;
      den = -den;
    }
    const g = gcd(num < 0n ? -num : num, den);
    this.num = g > 1n ? num / g : num;
    this.den = g > 1n ? den / g : den;
  }

  static of(n: number | bigint): Rational {
    if (typeof n === 'bigint') return new Rational(n);
    if (!Number.isFinite(n)) throw new RangeError('not a finite number');
    const r = parseDecimal(String(n));
    if (!r) throw new RangeError(`cannot represent ${n} exactly`);
    return r;
  }

  add(o: Rational): Rational {
    return new Rational(this.num * o.den + o.num * this.den, this.den * o.den);
  }
  sub(o: Rational): Rational {
    return new Rational(this.num * o.den - o.num * this.den, this.den * o.den);
  }
  mul(o: Rational): Rational {
    return new Rational(this.num * o.num, this.den * o.den);
  }
  /** Throws RangeError on division by zero. */
  div(o: Rational): Rational {
    return new Rational(this.num * o.den, this.den * o.num);
  }
  neg(): Rational {
    return new Rational(-this.num, this.den);
  }
  equals(o: Rational): boolean {
    return this.num === o.num && this.den === o.den;
  }
  compare(o: Rational): number {
    const d = this.num * o.den - o.num * this.den;
    return d < 0n ? -1 : d > 0n ? 1 : 0;
  }
  /** True when the value has a finite decimal expansion (denominator only has factors 2 and 5). */
  terminates(): boolean {
    let d = this.den;
    while (d % 2n === 0n) d /= 2n;
    while (d % 5n === 0n) d /= 5n;
    return d === 1n;
  }
  toNumber(): number {
    return Number(this.num) / Number(this.den);
  }
  toString(): string {
    return this.den === 1n ? `${this.num}` : `${this.num}/${this.den}`;
  }
}

function gcd(a: bigint, b: bigint): bigint {
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

/** Longest digit run accepted; bounds BigInt work on hostile input. */
export const MAX_DIGITS = 200;
const MAX_EXPONENT = 200;

/**
 * Parses a plain decimal literal exactly: `-12`, `3.25`, `.5`, `1.5e3` (no thousands separators,
 * no spaces). Returns null for anything else or for literals over the size limits.
 */
export function parseDecimal(s: string): Rational | null {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d{1,4}))?$/.exec(s);
  if (!m) return null;
  const [, sign, int = '', frac = '', exp] = m;
  if (int === '' && frac === '') return null;
  if (int.length + frac.length > MAX_DIGITS) return null;
  const e = exp === undefined ? 0 : Number(exp);
  if (Math.abs(e) > MAX_EXPONENT) return null;
  let num = BigInt((int || '0') + frac);
  let den = 10n ** BigInt(frac.length);
  if (e > 0) num *= 10n ** BigInt(e);
  if (e < 0) den *= 10n ** BigInt(-e);
  return new Rational(sign === '-' ? -num : num, den);
}
