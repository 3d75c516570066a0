// What both tokenizers share: the special tokens (fixed names, explicit splitting only when asked)
// and decoding (token bytes are joined between special tokens and decoded as UTF-8 once, which is
// what Hugging Face's ByteLevel and ByteFallback decoders do).
import { fromUtf8 } from './bytes.js';
import { SPECIAL_TOKENS, type SpecialTokenName, type Tokenizer } from './types.js';

export const SPECIAL_NAMES = Object.keys(SPECIAL_TOKENS) as SpecialTokenName[];

/** One entry of tokenizer.json's `added_tokens`. */
export interface HfAddedToken {
  id: number;
  content: string;
  single_word: boolean;
  lstrip: boolean;
  rstrip: boolean;
  normalized: boolean;
  special: boolean;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export abstract class TokenizerBase implements Tokenizer {
  abstract readonly kind: 'char' | 'bpe';
  readonly vocabSize: number;
  readonly padId: number;
  readonly bosId: number;
  readonly eosId: number;
  /** Token strings by id, as tokenizer.json spells them. */
  protected readonly tokens: readonly string[];
  /** Special (added) tokens: content -> id. Holds the eight named ones and any extra ones of a loaded file. */
  protected readonly specials: ReadonlyMap<string, number>;
  private readonly isSpecialId: Uint8Array;
  private readonly named: Record<SpecialTokenName, number>;
  /** Leftmost-longest match of any special token, as tokenizers.js's added-token splitter does. */
  private readonly specialPattern: RegExp;

  protected constructor(tokens: readonly string[], specials: ReadonlyMap<string, number>) {
    this.tokens = tokens;
    this.vocabSize = tokens.length;
    this.specials = specials;
    this.isSpecialId = new Uint8Array(tokens.length);
    for (const [content, id] of specials) {
      if (tokens[id] !== content) throw new Error(`special token '${content}' must have id ${id} in the vocabulary`);
      this.isSpecialId[id] = 1;
    }
    const named = {} as Record<SpecialTokenName, number>;
    for (const name of SPECIAL_NAMES) {
      const id = specials.get(SPECIAL_TOKENS[name]);
      if (id === undefined) throw new Error(`missing special token '${SPECIAL_TOKENS[name]}'`);
      named[name] = id;
    }
    this.named = named;
    this.padId = named.pad;
    this.bosId = named.bos;
    this.eosId = named.eos;
    const alternatives = [...specials.keys()].sort((a, b) => b.length - a.length || (a < b ? -1 : 1)).map(escapeRegExp);
    this.specialPattern = new RegExp(alternatives.join('|'), 'g');
  }

  specialId(name: SpecialTokenName): number {
    const id = this.named[name];
    if (id === undefined) throw new Error(`unknown special token name '${String(name)}'`);
    return id;
  }

  isSpecial(id: number): boolean {
    return this.isSpecialId[id] === 1;
  }

  /** The token's string as tokenizer.json spells it (byte-level chars for BPE, `<0xNN>` for byte fallback). */
  tokenString(id: number): string {
    this.checkId(id);
    return this.tokens[id]!;
  }

  /** The UTF-8 bytes a token stands for (a special token: the bytes of its text). */
  abstract tokenBytes(id: number): Uint8Array;

  /** Encode text that holds no special tokens (or whose special-token text is plain text). */
  protected abstract encodeOrdinary(text: string, out: number[]): void;

  encode(text: string, opts?: { allowSpecial?: boolean }): number[] {
    const out: number[] = [];
    if (!opts?.allowSpecial) {
      this.encodeOrdinary(text, out);
      return out;
    }
    const re = this.specialPattern;
    re.lastIndex = 0;
    let start = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      if (m.index > start) this.encodeOrdinary(text.slice(start, m.index), out);
      out.push(this.specials.get(m[0])!);
      start = m.index + m[0].length;
    }
    if (start < text.length) this.encodeOrdinary(text.slice(start), out);
    return out;
  }

  decode(ids: number[], opts?: { skipSpecial?: boolean }): string {
    let text = '';
    let pending: number[] = [];
    for (const id of ids) {
      this.checkId(id);
      if (this.isSpecialId[id] === 1) {
        if (opts?.skipSpecial) continue;
        if (pending.length > 0) {
          text += fromUtf8(pending);
          pending = [];
        }
        text += this.tokens[id]!;
      } else {
        for (const b of this.tokenBytes(id)) pending.push(b);
      }
    }
    if (pending.length > 0) text += fromUtf8(pending);
    return text;
  }

  abstract toJSON(): unknown;

  protected addedTokensJSON(): HfAddedToken[] {
    return [...this.specials]
      .sort((a, b) => a[1] - b[1])
      .map(([content, id]) => ({
        id,
        content,
        single_word: false,
        lstrip: false,
        rstrip: false,
        normalized: false,
        special: true,
      }));
  }

  /** tokenizer.json's model.vocab: token -> id (null prototype: a token may be spelled '__proto__'). */
  protected vocabJSON(): Record<string, number> {
    const vocab = Object.create(null) as Record<string, number>;
    this.tokens.forEach((t, id) => {
      vocab[t] = id;
    });
    return vocab;
  }

  protected checkId(id: number): void {
    if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) {
      throw new RangeError(`token id ${id} is outside the vocabulary (0..${this.vocabSize - 1})`);
    }
  }
}
