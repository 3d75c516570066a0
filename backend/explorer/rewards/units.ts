// A small unit table for K-12 answers: "5 cm", "5cm", "5 centimeters" and "50 mm" are the same
// length. Each unit maps to a dimension and an exact factor to that dimension's base unit.
import { Rational } from './rational.js';

export interface Unit {
  dim: string;
  /** Multiply by this to get the base unit of the dimension. */
  factor: Rational;
  name: string;
}

const r = (n: bigint, d = 1n) => new Rational(n, d);
const TABLE: [string, Rational, string[]][] = [
  ['length', r(1n, 1000n), ['mm', 'millimeter', 'millimetre']],
  ['length', r(1n, 100n), ['cm', 'centimeter', 'centimetre']],
  ['length', r(1n), ['m', 'meter', 'metre']],
  ['length', r(1000n), ['km', 'kilometer', 'kilometre']],
  ['length', r(254n, 10000n), ['in', 'inch', 'inches']],
  ['length', r(3048n, 10000n), ['ft', 'foot', 'feet']],
  ['length', r(9144n, 10000n), ['yd', 'yard']],
  ['length', r(1609344n, 1000n), ['mi', 'mile']],
  ['area', r(1n, 10000n), ['cm²', 'cm^2', 'cm2', 'sq cm', 'square centimeter', 'square centimetre']],
  ['area', r(1n), ['m²', 'm^2', 'm2', 'sq m', 'square meter', 'square metre']],
  ['area', r(92903n, 1000000n), ['ft²', 'ft^2', 'sq ft', 'square foot', 'square feet']],
  ['area', r(64516n, 100000000n), ['in²', 'in^2', 'sq in', 'square inch', 'square inches']],
  ['volume', r(1n, 1000n), ['ml', 'milliliter', 'millilitre', 'cm³', 'cm^3', 'cubic centimeter']],
  ['volume', r(1n), ['l', 'liter', 'litre']],
  ['mass', r(1n, 1000n), ['mg', 'milligram']],
  ['mass', r(1n), ['g', 'gram', 'gramme']],
  ['mass', r(1000n), ['kg', 'kilogram', 'kilo']],
  ['mass', r(45359237n, 100000n), ['lb', 'lbs', 'pound']],
  ['mass', r(28349523125n, 1000000000n), ['oz', 'ounce']],
  ['time', r(1n), ['s', 'sec', 'secs', 'second']],
  ['time', r(60n), ['min', 'mins', 'minute']],
  ['time', r(3600n), ['h', 'hr', 'hrs', 'hour']],
  ['time', r(86400n), ['day']],
  ['time', r(604800n), ['week', 'wk']],
  ['money', r(1n), ['$', 'dollar', 'usd']],
  ['money', r(1n, 100n), ['¢', 'cent']],
  ['percent', r(1n), ['%', 'percent', 'per cent', 'pct']],
  ['angle', r(1n), ['°', 'degree', 'deg']],
  ['speed', r(1000n, 3600n), ['km/h', 'kph', 'kmh', 'kilometers per hour', 'kilometres per hour']],
  ['speed', r(1n), ['m/s', 'meters per second', 'metres per second']],
  ['speed', r(1609344n, 3600000n), ['mph', 'miles per hour']],
];

const UNITS = new Map<string, Unit>();
for (const [dim, factor, names] of TABLE) for (const n of names) UNITS.set(n, { dim, factor, name: names[0]! });

/** The unit a suffix names ("cm", "centimeters", "Centimetres."), or null when it is not in the table. */
export function lookupUnit(suffix: string): Unit | null {
  const s = suffix
    .toLowerCase()
    .replace(/[.,;!]+$/, '')
    .replace(/\s+/g, ' ')
    .trim();
  if (s === '') return null;
  const exact = UNITS.get(s);
  if (exact) return exact;
  // plurals: "5 hours" -> hour, "3 pounds" -> pound ("inches", "feet" are in the table)
  if (s.endsWith('s')) return UNITS.get(s.slice(0, -1)) ?? null;
  return null;
}
