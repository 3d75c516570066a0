// The saved tokenizer.json must load in Hugging Face's own JavaScript tokenizers and give the same
// ids for every string. Hugging Face always splits special-token text into special ids, which our
// plain encode refuses to do (user text cannot inject control tokens), so plain strings are
// compared with plain encode and strings with markers with encode(..., { allowSpecial: true }).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { Rng } from '../../backend/core/rng.js';
import {
  CharTokenizer,
  SPECIAL_TOKENS,
  saveTokenizer,
  trainBpe,
  type Tokenizer,
} from '../../backend/model/tokenizer/index.js';
import { randomUnicode, syntheticCorpus, TRICKY } from './tokenizer-strings.js';

const SPECIALS = Object.values(SPECIAL_TOKENS);
const corpus = syntheticCorpus(2, 80_000);
const dir = mkdtempSync(join(tmpdir(), 'rft-tok-hf-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

function hfOf(tok: Tokenizer, name: string): HfTokenizer {
  saveTokenizer(tok, join(dir, name));
  const json = JSON.parse(readFileSync(join(dir, name, 'tokenizer.json'), 'utf8'));
  const config = JSON.parse(readFileSync(join(dir, name, 'tokenizer_config.json'), 'utf8'));
  return new HfTokenizer(json, config);
}

const kinds: [string, Tokenizer][] = [
  ['bpe', trainBpe([corpus], { vocabSize: 1200 })],
  ['char', CharTokenizer.train([corpus])],
  // A char tokenizer with a tiny alphabet sends most characters through byte fallback.
  ['char-small', CharTokenizer.fromAlphabet('abc é')],
];

const rng = new Rng(2024);
const plain: string[] = [...TRICKY];
for (let i = 0; i < 1500; i++) plain.push(randomUnicode(rng, 50));
for (let i = 0; i + 2000 <= corpus.length; i += 8000) plain.push(corpus.slice(i, i + 2000));
plain.push(' '.repeat(1000), '\n'.repeat(50) + 'x', 'ab'.repeat(700));
// Lone surrogates: both sides encode them as U+FFFD (TextEncoder).
plain.push('a\ud800b', '\udfff', 'emoji half \ud83d', '\ud83d\ud83d\ude00');
const plainStrings = plain.filter((s) => !SPECIALS.some((sp) => s.includes(sp)));

for (const [name, tok] of kinds) {
  const hf = hfOf(tok, name);

  test(`${name}: Hugging Face tokenizers.js encodes ${plainStrings.length} strings to the same ids`, () => {
    assert.ok(plainStrings.length > 1500);
    for (const s of plainStrings) assert.deepEqual(tok.encode(s), hf.encode(s).ids, JSON.stringify(s));
  });

  test(`${name}: Hugging Face agrees on special-token ids and on splitting marked-up text (allowSpecial)`, () => {
    for (const [i, sp] of SPECIALS.entries()) {
      assert.equal(hf.token_to_id(sp), i);
      assert.equal(hf.id_to_token(i), sp);
    }
    const r = new Rng(5);
    for (let i = 0; i < 300; i++) {
      let s = '';
      for (let j = 0; j < 4; j++) s += (r.next() < 0.5 ? r.pick(SPECIALS) : '') + randomUnicode(r, 12);
      assert.deepEqual(tok.encode(s, { allowSpecial: true }), hf.encode(s).ids, JSON.stringify(s));
    }
    const chat = '<|bos|><|user|>What is 6*7?<|end|><|assistant|>42<|end|>';
    assert.deepEqual(tok.encode(chat, { allowSpecial: true }), hf.encode(chat).ids);
  });

  test(`${name}: Hugging Face decodes our ids to the same text`, () => {
    for (const s of plainStrings) {
      // tokenizers.js's ByteFallback decoder drops a BOM that starts a byte run (TextDecoder default);
      // ours keeps it so the round trip stays exact.
      if (s.length === 0 || (name !== 'bpe' && s.includes('\ufeff'))) continue;
      const ids = tok.encode(s);
      assert.equal(hf.decode(ids, { clean_up_tokenization_spaces: false }), tok.decode(ids), JSON.stringify(s));
    }
    const ids = tok.encode('<|user|>hi é<|end|>', { allowSpecial: true });
    assert.equal(
      hf.decode(ids, { skip_special_tokens: true, clean_up_tokenization_spaces: false }),
      tok.decode(ids, { skipSpecial: true }),
    );
    assert.equal(hf.decode(ids, { clean_up_tokenization_spaces: false }), tok.decode(ids));
  });
}
