// The tokenizer module: two kinds (char, byte-level BPE), trained from text, stored as Hugging Face
// tokenizer.json. Import from here.
import { trainBpe } from './bpe-train.js';
import { CharTokenizer } from './char.js';
import type { BpeTokenizer } from './bpe.js';

export { SPECIAL_TOKENS, type SpecialTokenName, type Tokenizer } from './types.js';
export { CharTokenizer } from './char.js';
export { BpeTokenizer } from './bpe.js';
export { trainBpe } from './bpe-train.js';
export { tokenizerFromJSON } from './from-json.js';
export { loadTokenizer, saveTokenizer, tokenizerConfig, TOKENIZER_FILE } from './io.js';

export type TokenizerKind = 'char' | 'bpe';

export interface TrainOptions {
  /** Total vocabulary size (required for bpe; a cap for char). */
  vocabSize?: number;
  minFrequency?: number;
}

export const DEFAULT_BPE_VOCAB = 4096;

export function trainTokenizer(
  kind: TokenizerKind,
  texts: Iterable<string>,
  opts: TrainOptions = {},
): CharTokenizer | BpeTokenizer {
  if (kind === 'char') return CharTokenizer.train(texts, opts);
  return trainBpe(texts, { vocabSize: opts.vocabSize ?? DEFAULT_BPE_VOCAB, minFrequency: opts.minFrequency });
}
export { readCorpusFile } from './corpus.js';
export { tokenPieces } from './pieces.js';
