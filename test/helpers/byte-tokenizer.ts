// A minimal byte tokenizer for model tests that must not depend on the tokenizer module.
import { SPECIAL_TOKENS, type SpecialTokenName, type Tokenizer } from '../../backend/model/tokenizer/types.js';

const NAMES = Object.keys(SPECIAL_TOKENS) as SpecialTokenName[];

export class ByteTestTokenizer implements Tokenizer {
  readonly kind = 'char' as const;
  readonly vocabSize = NAMES.length + 256;
  readonly padId = 0;
  readonly bosId = 1;
  readonly eosId = 2;
  specialId(name: SpecialTokenName): number {
    return NAMES.indexOf(name);
  }
  encode(text: string): number[] {
    return [...Buffer.from(text, 'utf8')].map((b) => b + NAMES.length);
  }
  decode(ids: number[], opts?: { skipSpecial?: boolean }): string {
    const bytes: number[] = [];
    let s = '';
    for (const id of ids) {
      if (id < NAMES.length) {
        if (!opts?.skipSpecial) {
          s += Buffer.from(bytes).toString('utf8') + SPECIAL_TOKENS[NAMES[id]!];
          bytes.length = 0;
        }
      } else bytes.push(id - NAMES.length);
    }
    return s + Buffer.from(bytes).toString('utf8');
  }
  toJSON(): unknown {
    return { kind: 'byte-test' };
  }
}
