// Character tokenizer: one token per Unicode character of its alphabet, and `<0xNN>` byte tokens
// for every other character (UTF-8 bytes), so any string round-trips. In tokenizer.json it is a
// Hugging Face BPE model with no merges, no pre-tokenizer and byte_fallback on, which is exactly
// how Hugging Face tokenizers encode it too.
// Ids: the special tokens 0..7 (SPECIAL_TOKENS order), the 256 byte tokens 8..263, then characters
// by descending frequency in the training text.
import { SPECIAL_NAMES, TokenizerBase } from './base.js';
import { byteTokenName, utf8 } from './bytes.js';
import { SPECIAL_TOKENS } from './types.js';

export interface CharTrainOptions {
  /** Total vocabulary size cap (special + byte + character tokens); default: every character seen. */
  vocabSize?: number;
  /** Characters seen fewer times are left to byte fallback; default 1. */
  minFrequency?: number;
}

/** Ids of a fresh vocabulary: the specials and the byte tokens, before any character. */
export const CHAR_BASE_SIZE = SPECIAL_NAMES.length + 256;

function isSurrogate(cp: number): boolean {
  return cp >= 0xd800 && cp <= 0xdfff;
}

export class CharTokenizer extends TokenizerBase {
  readonly kind = 'char' as const;
  private readonly charIds: ReadonlyMap<string, number>;
  private readonly byteIds: Int32Array;
  private readonly bytesById: (Uint8Array | undefined)[];

  /**
   * `tokens[id]` is a special token's text, a `<0xNN>` byte token or a single character; every one
   * of the 256 byte tokens must be present.
   */
  constructor(tokens: readonly string[], specials: ReadonlyMap<string, number>, byteIds: Int32Array) {
    super(tokens, specials);
    if (byteIds.length !== 256) throw new Error('a char tokenizer needs all 256 byte tokens');
    this.byteIds = byteIds;
    const charIds = new Map<string, number>();
    const bytesById: (Uint8Array | undefined)[] = new Array(tokens.length);
    for (let b = 0; b < 256; b++) bytesById[byteIds[b]!] = Uint8Array.of(b);
    tokens.forEach((t, id) => {
      if (this.isSpecial(id)) bytesById[id] = utf8(t);
      else if (bytesById[id] === undefined) {
        charIds.set(t, id);
        bytesById[id] = utf8(t);
      }
    });
    this.charIds = charIds;
    this.bytesById = bytesById;
  }

  /** A tokenizer over the given characters (in this order), after the specials and byte tokens. */
  static fromAlphabet(chars: Iterable<string>): CharTokenizer {
    const tokens: string[] = SPECIAL_NAMES.map((n) => SPECIAL_TOKENS[n]);
    const specials = new Map(tokens.map((t, id) => [t, id]));
    const byteIds = new Int32Array(256);
    for (let b = 0; b < 256; b++) {
      byteIds[b] = tokens.length;
      tokens.push(byteTokenName(b));
    }
    const seen = new Set<string>();
    for (const c of chars) {
      const cp = c.codePointAt(0)!;
      if ([...c].length !== 1 || isSurrogate(cp))
        throw new Error(`alphabet entry ${JSON.stringify(c)} is not one well-formed character`);
      if (seen.has(c)) continue;
      seen.add(c);
      tokens.push(c);
    }
    return new CharTokenizer(tokens, specials, byteIds);
  }

  /** Alphabet = the characters of `texts`, most frequent first (ties: lower code point first). */
  static train(texts: Iterable<string>, opts: CharTrainOptions = {}): CharTokenizer {
    const minFrequency = opts.minFrequency ?? 1;
    if (opts.vocabSize !== undefined && (!Number.isInteger(opts.vocabSize) || opts.vocabSize < CHAR_BASE_SIZE)) {
      throw new Error(
        `vocabSize must be an integer >= ${CHAR_BASE_SIZE} (specials + byte tokens), got ${opts.vocabSize}`,
      );
    }
    const counts = new Map<number, number>();
    for (const text of texts) {
      for (const c of text) {
        const cp = c.codePointAt(0)!;
        if (!isSurrogate(cp)) counts.set(cp, (counts.get(cp) ?? 0) + 1);
      }
    }
    let ranked = [...counts].filter(([, n]) => n >= minFrequency).sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    if (opts.vocabSize !== undefined) ranked = ranked.slice(0, opts.vocabSize - CHAR_BASE_SIZE);
    return CharTokenizer.fromAlphabet(ranked.map(([cp]) => String.fromCodePoint(cp)));
  }

  tokenBytes(id: number): Uint8Array {
    this.checkId(id);
    return this.bytesById[id]!;
  }

  protected encodeOrdinary(text: string, out: number[]): void {
    for (const c of text) {
      const id = this.charIds.get(c);
      if (id !== undefined) out.push(id);
      // A lone surrogate encodes as U+FFFD's bytes, as TextEncoder (and tokenizers.js) do.
      else for (const b of utf8(c)) out.push(this.byteIds[b]!);
    }
  }

  toJSON(): unknown {
    return {
      version: '1.0',
      truncation: null,
      padding: null,
      added_tokens: this.addedTokensJSON(),
      normalizer: null,
      pre_tokenizer: null,
      post_processor: null,
      decoder: { type: 'Sequence', decoders: [{ type: 'ByteFallback' }, { type: 'Fuse' }] },
      model: {
        type: 'BPE',
        dropout: null,
        unk_token: null,
        continuing_subword_prefix: null,
        end_of_word_suffix: null,
        fuse_unk: false,
        byte_fallback: true,
        ignore_merges: false,
        vocab: this.vocabJSON(),
        merges: [],
      },
    };
  }
}
