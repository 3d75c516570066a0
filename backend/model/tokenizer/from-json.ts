// Reads a Hugging Face tokenizer.json back into a CharTokenizer or BpeTokenizer, checking every
// field it relies on; anything else (normalizers, unk tokens, other models) is refused with an error
// that names the file and the field, rather than encoded differently from Hugging Face.
import { InputError } from '../../core/errors.js';
import type { TokenizerBase } from './base.js';
import { BpeTokenizer } from './bpe.js';
import { BYTE_TO_CHAR, byteTokenName, byteLevelToBytes } from './bytes.js';
import { CharTokenizer } from './char.js';
import { SPECIAL_TOKENS } from './types.js';

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

type Fail = (field: string, message: string) => never;

export function tokenizerFromJSON(json: unknown, file?: string): CharTokenizer | BpeTokenizer {
  const fail: Fail = (field, message) => {
    throw new InputError(message, { file, field });
  };
  if (!isObject(json)) fail('(root)', 'expected a tokenizer.json object');
  const root = json as Json;
  const { model, byteFallback } = readModel(root, fail);
  const tokens = readVocab(model, fail);
  const specials = readSpecials(root, tokens, fail);
  const merges = model.merges ?? [];
  if (!Array.isArray(merges)) return fail('model.merges', 'expected an array');
  if (root.pre_tokenizer === null || root.pre_tokenizer === undefined)
    return charTokenizer(root, byteFallback, merges, tokens, specials, fail);
  return bpeTokenizer(root, byteFallback, merges, tokens, specials, fail);
}

/** `model`: a BPE with none of the options this implementation does not have; no normalizer. */
function readModel(root: Json, fail: Fail): { model: Json; byteFallback: unknown } {
  const model = root.model;
  if (!isObject(model)) return fail('model', 'expected an object');
  if (model.type !== 'BPE') fail('model.type', `expected 'BPE', got ${JSON.stringify(model.type)}`);
  for (const f of ['dropout', 'unk_token', 'continuing_subword_prefix', 'end_of_word_suffix'] as const) {
    if (model[f] !== undefined && model[f] !== null) fail(`model.${f}`, 'not supported: must be null');
  }
  if (model.ignore_merges !== undefined && model.ignore_merges !== false)
    fail('model.ignore_merges', 'not supported: must be false');
  const byteFallback = model.byte_fallback ?? false;
  if (typeof byteFallback !== 'boolean') fail('model.byte_fallback', 'expected true or false');
  if (root.normalizer !== undefined && root.normalizer !== null) fail('normalizer', 'not supported: must be null');
  return { model, byteFallback };
}

/** Vocabulary: ids must run 0..n-1 with no gaps or repeats. */
function readVocab(model: Json, fail: Fail): string[] {
  const vocab = model.vocab;
  if (!isObject(vocab)) return fail('model.vocab', 'expected an object of token -> id');
  const entries = Object.entries(vocab);
  const tokens: string[] = new Array(entries.length);
  for (const [t, id] of entries) {
    if (!Number.isInteger(id) || (id as number) < 0 || (id as number) >= entries.length) {
      fail(
        `model.vocab[${JSON.stringify(t)}]`,
        `id must be an integer in 0..${entries.length - 1}, got ${JSON.stringify(id)}`,
      );
    }
    if (tokens[id as number] !== undefined)
      fail(`model.vocab[${JSON.stringify(t)}]`, `id ${id} is also given to ${JSON.stringify(tokens[id as number])}`);
    tokens[id as number] = t;
  }
  return tokens;
}

/** Special tokens: every named one must be there, as a special added token that is also in the vocabulary. */
function readSpecials(root: Json, tokens: string[], fail: Fail): Map<string, number> {
  const added = root.added_tokens ?? [];
  if (!Array.isArray(added)) return fail('added_tokens', 'expected an array');
  const specials = new Map<string, number>();
  added.forEach((a: unknown, i) => {
    const field = `added_tokens[${i}]`;
    if (!isObject(a)) return fail(field, 'expected an object');
    if (typeof a.content !== 'string' || a.content === '') fail(`${field}.content`, 'expected a non-empty string');
    const content = a.content as string;
    if (!Number.isInteger(a.id)) fail(`${field}.id`, `expected an integer, got ${JSON.stringify(a.id)}`);
    if (a.special !== true) fail(`${field}.special`, `only special added tokens are supported ('${content}')`);
    for (const f of ['single_word', 'lstrip', 'rstrip', 'normalized'] as const) {
      if (a[f] !== undefined && a[f] !== false) fail(`${field}.${f}`, 'not supported: must be false');
    }
    if (tokens[a.id as number] !== content) {
      fail(
        `${field}.id`,
        `'${content}' must have the same id in model.vocab (vocab has ${JSON.stringify(tokens[a.id as number] ?? null)} at ${a.id})`,
      );
    }
    if (specials.has(content)) fail(`${field}.content`, `'${content}' is listed twice`);
    specials.set(content, a.id as number);
  });
  for (const content of Object.values(SPECIAL_TOKENS)) {
    if (!specials.has(content)) fail('added_tokens', `missing the special token '${content}'`);
  }
  return specials;
}

/** Char tokenizer: no pre-tokenizer, no merges, byte fallback over all 256 bytes. */
function charTokenizer(
  root: Json,
  byteFallback: unknown,
  merges: unknown[],
  tokens: string[],
  specials: Map<string, number>,
  fail: Fail,
): CharTokenizer {
  const decoder = root.decoder;
  const post = root.post_processor;
  if (byteFallback !== true)
    fail('model.byte_fallback', 'must be true when there is no pre-tokenizer (char tokenizer)');
  if (merges.length > 0) fail('model.merges', 'a char tokenizer (no pre-tokenizer) has no merges');
  if (post !== undefined && post !== null) fail('post_processor', 'not supported: must be null');
  const ok =
    isObject(decoder) &&
    decoder.type === 'Sequence' &&
    Array.isArray(decoder.decoders) &&
    decoder.decoders.length === 2 &&
    isObject(decoder.decoders[0]) &&
    decoder.decoders[0].type === 'ByteFallback' &&
    isObject(decoder.decoders[1]) &&
    decoder.decoders[1].type === 'Fuse';
  if (!ok) fail('decoder', 'expected Sequence [ByteFallback, Fuse] for a char tokenizer');
  const idOf = new Map(tokens.map((t, id) => [t, id]));
  const byteIds = new Int32Array(256);
  for (let b = 0; b < 256; b++) {
    const id = idOf.get(byteTokenName(b));
    if (id === undefined || specials.has(byteTokenName(b)))
      return fail('model.vocab', `missing the byte-fallback token '${byteTokenName(b)}'`);
    byteIds[b] = id;
  }
  tokens.forEach((t, id) => {
    if (specials.has(t) || /^<0x[0-9A-F]{2}>$/.test(t)) return;
    const chars = [...t];
    const cp = t.codePointAt(0)!;
    if (chars.length !== 1 || (cp >= 0xd800 && cp <= 0xdfff)) {
      fail(
        `model.vocab[${JSON.stringify(t)}]`,
        `a char tokenizer's token must be one well-formed character (id ${id})`,
      );
    }
  });
  return wrap(() => new CharTokenizer(tokens, specials, byteIds), fail);
}

/** Byte-level BPE: a ByteLevel pre-tokenizer and decoder, every byte in the vocabulary, merges of vocabulary tokens. */
function bpeTokenizer(
  root: Json,
  byteFallback: unknown,
  merges: unknown[],
  tokens: string[],
  specials: Map<string, number>,
  fail: Fail,
): BpeTokenizer {
  const pre = root.pre_tokenizer;
  const decoder = root.decoder;
  const post = root.post_processor;
  if (!isObject(pre) || pre.type !== 'ByteLevel')
    return fail(
      'pre_tokenizer',
      `expected null (char) or ByteLevel (bpe), got ${JSON.stringify(isObject(pre) ? pre.type : pre)}`,
    );
  if (pre.add_prefix_space !== undefined && pre.add_prefix_space !== false)
    fail('pre_tokenizer.add_prefix_space', 'not supported: must be false');
  if (pre.use_regex !== undefined && pre.use_regex !== true)
    fail('pre_tokenizer.use_regex', 'not supported: must be true');
  if (byteFallback) fail('model.byte_fallback', 'must be false for a ByteLevel tokenizer');
  if (post !== undefined && post !== null && !(isObject(post) && post.type === 'ByteLevel'))
    fail('post_processor', 'expected null or ByteLevel');
  if (!isObject(decoder) || decoder.type !== 'ByteLevel')
    fail('decoder', 'expected ByteLevel for a ByteLevel tokenizer');
  tokens.forEach((t, id) => {
    if (!specials.has(t) && byteLevelToBytes(t) === null)
      fail(`model.vocab[${JSON.stringify(t)}]`, `token ${id} is not a byte-level string`);
  });
  const idOf = new Map<string, number>();
  tokens.forEach((t, id) => {
    if (!specials.has(t)) idOf.set(t, id);
  });
  for (let b = 0; b < 256; b++)
    if (!idOf.has(BYTE_TO_CHAR[b]!))
      fail(
        'model.vocab',
        `missing the token of byte 0x${b.toString(16).padStart(2, '0')} (${JSON.stringify(BYTE_TO_CHAR[b])})`,
      );
  const pairs: [number, number][] = merges.map((m: unknown, i): [number, number] => {
    const field = `model.merges[${i}]`;
    let parts: unknown[];
    if (typeof m === 'string') parts = m.split(' ');
    else if (Array.isArray(m)) parts = m;
    else return fail(field, 'expected "left right" or ["left", "right"]');
    if (parts.length !== 2 || typeof parts[0] !== 'string' || typeof parts[1] !== 'string')
      return fail(field, 'expected exactly two tokens');
    const l = idOf.get(parts[0]);
    const r = idOf.get(parts[1]);
    if (l === undefined) return fail(field, `${JSON.stringify(parts[0])} is not in model.vocab`);
    if (r === undefined) return fail(field, `${JSON.stringify(parts[1])} is not in model.vocab`);
    if (!idOf.has(parts[0] + parts[1]))
      fail(field, `the merged token ${JSON.stringify(parts[0] + parts[1])} is not in model.vocab`);
    return [l, r];
  });
  return wrap(() => new BpeTokenizer(tokens, specials, pairs), fail);
}

function wrap<T extends TokenizerBase>(make: () => T, fail: Fail): T {
  try {
    return make();
  } catch (e) {
    return fail('model', e instanceof Error ? e.message : String(e));
  }
}
