// Test strings for the tokenizer tests: random Unicode from many scripts and a small synthetic
// training corpus, all from a seeded Rng so failures reproduce.
import { Rng } from '../../backend/core/rng.js';

const range = (lo: number, hi: number): [number, number] => [lo, hi];
/** Code point ranges to draw from (no surrogates: those are tested on their own). */
const POOLS: [number, number][] = [
  range(0x20, 0x7e), // ASCII printable
  range(0x20, 0x7e),
  range(0x00, 0x1f), // control chars, \t \n \r
  range(0x7f, 0x9f), // DEL and C1 controls (U+0085 NEL: whitespace to Unicode, not to JS's \s)
  range(0xa0, 0xff), // Latin-1 (NBSP, ², ³, ¹, ¼ ...)
  range(0x100, 0x24f), // Latin extended
  range(0x300, 0x36f), // combining marks
  range(0x391, 0x3c9), // Greek
  range(0x400, 0x4ff), // Cyrillic
  range(0x5d0, 0x5ea), // Hebrew
  range(0x600, 0x6ff), // Arabic
  range(0x900, 0x97f), // Devanagari
  range(0xe00, 0xe7f), // Thai
  range(0x1100, 0x11ff), // Hangul jamo
  range(0x2000, 0x206f), // general punctuation, zero-width chars, line/paragraph separators
  range(0x3000, 0x303f), // CJK punctuation, ideographic space
  range(0x3040, 0x30ff), // kana
  range(0x4e00, 0x9fff), // CJK
  range(0xac00, 0xd7a3), // Hangul syllables
  range(0xe000, 0xf8ff), // private use
  range(0xfe00, 0xfe0f), // variation selectors
  range(0xfeff, 0xffff), // BOM, specials, U+FFFD, noncharacters U+FFFE/U+FFFF
  range(0x1f300, 0x1faff), // emoji
  range(0x1d400, 0x1d7ff), // math alphanumerics
  range(0x10000, 0x10ffff), // anything astral
];
const SNIPPETS = [
  ' ',
  '  ',
  '\n',
  '\r\n',
  '\t',
  "'s",
  "'ll",
  "'t",
  "n't",
  ' the',
  ' 123',
  '3.14',
  '\u200d',
  '👩‍💻',
  '🇫🇷',
  'é',
  'é',
  '<|',
  '|>',
  '<0x41>',
  '\u00a0',
  '\u3000',
  '\ufeff',
  '\u2028',
];

export function randomUnicode(rng: Rng, maxLen = 40): string {
  const n = rng.int(0, maxLen + 1);
  let s = '';
  for (let i = 0; i < n; i++) {
    if (rng.next() < 0.2) s += rng.pick(SNIPPETS);
    else {
      const [lo, hi] = rng.pick(POOLS);
      s += String.fromCodePoint(rng.int(lo, hi + 1));
    }
  }
  return s;
}

export const TRICKY = [
  '',
  ' ',
  'a',
  'Hello, world!',
  'héllo wörld',
  '你好，世界',
  '🤖👍🏽👨‍👩‍👧‍👦🇯🇵',
  'e\u0301\u0302\u0303 combining',
  "it's we'll they're I'm you've he'd don't",
  'tabs\tand\nnew\r\nlines\n\n\n',
  '    leading and trailing spaces    ',
  '1234567890 3.14159 1e-9 0xFF',
  '\u0000\u0001\u007f\u0080\u00ff',
  '\ufeffBOM at start',
  'ZWJ\u200d and ZWNJ\u200c and NBSP\u00a0here',
  'x'.repeat(500),
  ' '.repeat(300) + 'end',
  '9'.repeat(400),
  '<0x41><0xFF> text that looks like byte tokens',
  '<| not special |> <|usr|> <|end',
  '\u{10FFFF}\u{E0001}\u{1F600}',
];

const WORDS = (
  'the of and to in is that for it with as was on be by this are at from or an have not which but all were when we there can ' +
  'model token reward policy gradient answer question solve compute value function return print list dict string number ' +
  'train explore buffer expert sample group advantage loss step learning rate batch'
).split(' ');
const EXTRA = [
  'café',
  'naïve',
  'über',
  'déjà',
  '数学',
  '答案',
  'Привет',
  'مرحبا',
  '😀',
  '🚀',
  'x²',
  '½',
  'π',
  '∑',
  '→',
];

/** Deterministic English-like text with some code, numbers and other scripts (about `chars` long). */
export function syntheticCorpus(seed: number, chars: number): string {
  const rng = new Rng(seed);
  const parts: string[] = [];
  let n = 0;
  while (n < chars) {
    const r = rng.next();
    let piece: string;
    if (r < 0.8) piece = rng.pick(WORDS);
    else if (r < 0.88) piece = String(rng.int(0, 10000));
    else if (r < 0.94) piece = rng.pick(EXTRA);
    else if (r < 0.97) piece = `def f${rng.int(0, 9)}(x):\n    return x * ${rng.int(0, 99)}\n`;
    else piece = rng.pick(['.', ',', '?', '!', "'s", '\n', ':', '(', ')']);
    parts.push(piece);
    parts.push(rng.next() < 0.9 ? ' ' : '\n');
    n += piece.length + 1;
  }
  return parts.join('');
}

/** Lone surrogates replaced by U+FFFD (String.prototype.toWellFormed, which the ES2022 lib lacks). */
export function toWellFormed(s: string): string {
  return s.replace(/\p{Cs}/gu, '\ufffd');
}
export function isWellFormed(s: string): boolean {
  return !/\p{Cs}/u.test(s);
}
