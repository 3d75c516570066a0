// The tokenizer contract the model, explorer and trainer rely on.

/** Special tokens every tokenizer of the project has, with fixed names. */
export const SPECIAL_TOKENS = {
  pad: '<|pad|>',
  bos: '<|bos|>',
  eos: '<|eos|>',
  system: '<|system|>',
  user: '<|user|>',
  assistant: '<|assistant|>',
  environment: '<|environment|>',
  end: '<|end|>',
} as const;
export type SpecialTokenName = keyof typeof SPECIAL_TOKENS;

export interface Tokenizer {
  readonly kind: 'char' | 'bpe' | 'hf';
  readonly vocabSize: number;
  readonly padId: number;
  readonly bosId: number;
  readonly eosId: number;
  /** Id of a special token by its name ('user', 'assistant', ...). */
  specialId(name: SpecialTokenName): number;
  /**
   * Encode text exactly: decode(encode(s)) === s for every well-formed string (any UTF-8 text). A
   * lone surrogate, which has no UTF-8 form, is encoded as U+FFFD (as TextEncoder does). Special-token
   * strings that appear in `text` are encoded as ordinary text (so user data can never inject
   * control tokens) unless `allowSpecial` is set.
   */
  encode(text: string, opts?: { allowSpecial?: boolean }): number[];
  /** Decode ids; special tokens are dropped when `skipSpecial` is set. */
  decode(ids: number[], opts?: { skipSpecial?: boolean }): string;
  /** Hugging Face tokenizer.json content. */
  toJSON(): unknown;
}
