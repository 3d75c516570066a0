// Columnar values as the JSON-shaped records every other taskset format gives: 64-bit integers as
// numbers where exact (else the decimal string, counted so the reader can say so), lists and structs
// as plain arrays and objects (so `format` paths such as `messages[0].content` reach into them),
// dates as ISO strings. Binary stays a Uint8Array (an image's bytes).

/** Integers read as strings because they are beyond 2^53, per column: the reader's note. */
export type BigNotes = Map<string, number>;

function isArrowVector(v: object): v is { toArray(): ArrayLike<unknown>; length: number; get(i: number): unknown } {
  return 'type' in v && 'data' in v && typeof (v as { get?: unknown }).get === 'function';
}

export function plainValue(v: unknown, column: string, notes: BigNotes): unknown {
  if (typeof v === 'bigint') {
    if (v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)) return Number(v);
    notes.set(column, (notes.get(column) ?? 0) + 1);
    return v.toString();
  }
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof Uint8Array) return v;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
  if (ArrayBuffer.isView(v))
    return Array.from(v as unknown as ArrayLike<number | bigint>, (x) => plainValue(x, column, notes));
  if (Array.isArray(v)) return v.map((x) => plainValue(x, column, notes));
  if (isArrowVector(v)) {
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) out.push(plainValue(v.get(i), column, notes));
    return out;
  }
  // Arrow struct/map rows are proxies: toJSON gives their fields (a Map for map rows).
  const obj = typeof (v as { toJSON?: unknown }).toJSON === 'function' ? (v as { toJSON(): unknown }).toJSON() : v;
  if (obj instanceof Map) {
    const out: Record<string, unknown> = {};
    for (const [k, x] of obj) out[String(k)] = plainValue(x, column, notes);
    return out;
  }
  if (obj === null || typeof obj !== 'object') return obj;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(obj)) out[k] = plainValue(x, column, notes);
  return out;
}

/** `file: column 'id': 3 integer(s) beyond 2^53 read as text (exact)`, one per column. */
export function bigNoteLines(file: string, notes: BigNotes): string[] {
  return [...notes].map(
    ([c, n]) => `${file}: column '${c}': ${n} integer(s) beyond 2^53 read as text (a number would lose digits)`,
  );
}
