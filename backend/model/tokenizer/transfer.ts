// A tokenizer sent to a worker thread (rollout workers): plain data that structured clone carries,
// rebuilt on the other side into the same tokenizer. An imported model's travels with its
// tokenizer_config.json, generation_config.json and chosen chat template, not as bare tokenizer.json
// (which the project's own loader refuses and which would lose its eos ids and template).
import { HfTokenizer, type HfTokenizerFiles } from '../hf/tokenizer.js';
import type { ChatTemplateSource } from '../hf/chat-template.js';
import { tokenizerFromJSON } from './from-json.js';
import type { Tokenizer } from './types.js';

export type TokenizerTransfer =
  | { kind: 'own'; json: unknown }
  | { kind: 'hf'; files: HfTokenizerFiles; where: string; template?: ChatTemplateSource; noTemplate: string };

export function tokenizerTransfer(tok: Tokenizer): TokenizerTransfer {
  if (tok.kind !== 'hf') return { kind: 'own', json: tok.toJSON() };
  return (tok as HfTokenizer).transfer();
}

export function tokenizerFromTransfer(t: TokenizerTransfer): Tokenizer {
  return t.kind === 'own' ? tokenizerFromJSON(t.json) : new HfTokenizer(t.files, t.where, t.template, t.noTemplate);
}
