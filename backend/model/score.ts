// Per-token log-probs of one text under a model: the ids its tokenizer gives and, for each i,
// log p(ids[i+1] | ids[0..i]). What `rft model score` prints and the llama.cpp checks compare.
import { tf } from './engine.js';
import { tokenLogprobs } from './logprobs.js';
import type { Transformer } from './transformer.js';
import type { Tokenizer } from './tokenizer/types.js';
import type { HfTokenizer } from './hf/tokenizer.js';

/** Ids of `text` as the model's tokenizer gives them by default (an imported tokenizer's own encode(text)). */
export function scoreIdsOf(tok: Tokenizer, text: string): number[] {
  return tok.kind === 'hf' ? (tok as HfTokenizer).encodeDefault(text) : tok.encode(text);
}

export async function scoreIds(model: Transformer, ids: number[]): Promise<number[]> {
  if (ids.length < 2) return [];
  const t = tf.tidy(() => tokenLogprobs(model, tf.tensor2d([ids], [1, ids.length], 'int32')).logprobs);
  const out = [...((await t.data()) as Float32Array)];
  t.dispose();
  return out;
}
