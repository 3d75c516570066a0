// Byte-level helpers shared by both tokenizers: UTF-8 conversion, GPT-2's byte <-> printable-char
// map, the GPT-2 pre-tokenization regex, and the `<0xNN>` byte-fallback token names.
//
// Strings are converted with TextEncoder, so a lone surrogate (a JS string that is not well-formed
// UTF-16) is encoded as U+FFFD; decode then yields U+FFFD in its place. Every well-formed string
// round-trips exactly. Hugging Face's tokenizers.js does the same, so ids agree either way.

const encoder = new TextEncoder();
// ignoreBOM: a leading U+FEFF is text like any other; the default decoder would swallow it.
const decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

export function fromUtf8(bytes: Uint8Array | number[]): string {
  return decoder.decode(bytes instanceof Uint8Array ? bytes : Uint8Array.from(bytes));
}

/**
 * GPT-2's pre-tokenization pattern, exactly as tokenizers.js compiles it for the ByteLevel
 * pre-tokenizer (the same JS regex semantics keep both sides in agreement on every input).
 */
export const BYTE_LEVEL_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/** GPT-2's map from each byte to a printable character, so vocabulary entries are visible strings. */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const map = new Array<string>(256);
  for (const b of printable) map[b] = String.fromCharCode(b);
  let n = 0;
  for (let b = 0; b < 256; b++) if (map[b] === undefined) map[b] = String.fromCharCode(256 + n++);
  return map;
})();

export const CHAR_TO_BYTE: ReadonlyMap<string, number> = new Map(BYTE_TO_CHAR.map((c, b) => [c, b]));

/** Byte-level string (one char per byte) of raw bytes. */
export function bytesToByteLevel(bytes: Uint8Array | number[]): string {
  let s = '';
  for (const b of bytes) s += BYTE_TO_CHAR[b];
  return s;
}

/** Raw bytes of a byte-level string; null if a character is outside the 256-char alphabet. */
export function byteLevelToBytes(s: string): number[] | null {
  const out: number[] = [];
  for (const c of s) {
    const b = CHAR_TO_BYTE.get(c);
    if (b === undefined) return null;
    out.push(b);
  }
  return out;
}

/** `<0x0A>`-style token name of a byte, as sentencepiece and Hugging Face byte fallback spell it. */
export function byteTokenName(b: number): string {
  return `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
}
