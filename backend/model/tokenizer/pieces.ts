// Per-token text for showing a response token by token (the editor's token view, `rft buffer show`).
// Each token is decoded on its own, so byte-level pieces ('Ġthe', 'Ċ') read as the text they stand
// for. A character whose UTF-8 bytes are split across tokens cannot be shown on any one of them:
// its text goes on the token that completes it, and the tokens before show ''.
import type { Tokenizer } from './types.js';

const REPLACEMENT = '\ufffd';
/** A UTF-8 character has at most 4 bytes, so at most 4 tokens are held back for one. */
const MAX_HELD = 4;

export function tokenPieces(tok: Tokenizer, ids: readonly number[]): string[] {
  const out: string[] = [];
  let held: number[] = [];
  for (const id of ids) {
    held.push(id);
    const text = tok.decode(held);
    // An incomplete character decodes to U+FFFD at the end: wait for the token that completes it.
    if (text.endsWith(REPLACEMENT) && held.length < MAX_HELD) {
      out.push('');
      continue;
    }
    out.push(text);
    held = [];
  }
  // Tokens still held at the end (a response cut mid-character) show what they decode to.
  if (held.length) out[out.length - 1] = tok.decode(held);
  return out;
}
