import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Rng } from '../../backend/core/rng.js';
import {
  type BpeTokenizer,
  CharTokenizer,
  SPECIAL_TOKENS,
  trainBpe,
  type SpecialTokenName,
  type Tokenizer,
} from '../../backend/model/tokenizer/index.js';
import { BYTE_LEVEL_PATTERN, BYTE_TO_CHAR, utf8 } from '../../backend/model/tokenizer/bytes.js';
import { pairKey } from '../../backend/model/tokenizer/bpe.js';
import { isWellFormed, randomUnicode, syntheticCorpus, toWellFormed, TRICKY } from './tokenizer-strings.js';

const NAMES = Object.keys(SPECIAL_TOKENS) as SpecialTokenName[];
const corpus = syntheticCorpus(1, 60_000);
const bpe = trainBpe([corpus], { vocabSize: 600 });
const char = CharTokenizer.train([corpus]);
const kinds: [string, Tokenizer][] = [
  ['bpe', bpe],
  ['char', char],
];

test('special tokens have fixed ids 0..7 in SPECIAL_TOKENS order, both kinds', () => {
  for (const [, tok] of kinds) {
    NAMES.forEach((name, i) => assert.equal(tok.specialId(name), i));
    assert.equal(tok.padId, 0);
    assert.equal(tok.bosId, 1);
    assert.equal(tok.eosId, 2);
  }
});

test('decode(encode(s)) === s for tricky and random well-formed strings, both kinds', () => {
  const rng = new Rng(7);
  const strings = [...TRICKY, ...Array.from({ length: 600 }, () => randomUnicode(rng, 60))];
  for (const [kind, tok] of kinds) {
    for (const s of strings) {
      assert.ok(isWellFormed(s));
      const ids = tok.encode(s);
      assert.equal(tok.decode(ids), s, `${kind}: ${JSON.stringify(s)}`);
      for (const id of ids) assert.ok(Number.isInteger(id) && id >= 0 && id < tok.vocabSize);
    }
  }
});

test('plain encode never yields special ids, even for special-token text; allowSpecial splits it', () => {
  const text = `${SPECIAL_TOKENS.bos}${SPECIAL_TOKENS.user}What is 2+2?${SPECIAL_TOKENS.end}${SPECIAL_TOKENS.assistant}4${SPECIAL_TOKENS.end}<|end`;
  for (const [kind, tok] of kinds) {
    const plain = tok.encode(text);
    for (const id of plain) assert.ok(id >= NAMES.length, `${kind}: special id ${id} from plain text`);
    assert.equal(tok.decode(plain), text);
    const withSpecial = tok.encode(text, { allowSpecial: true });
    const u = tok.specialId('user');
    const a = tok.specialId('assistant');
    const e = tok.specialId('end');
    assert.deepEqual(withSpecial.slice(0, 2), [tok.bosId, u], kind);
    assert.deepEqual(
      withSpecial.filter((id) => id < NAMES.length),
      [tok.bosId, u, e, a, e],
      kind,
    );
    // Between the markers the text is encoded as ordinary text.
    const q = tok.encode('What is 2+2?');
    assert.deepEqual(withSpecial.slice(2, 2 + q.length), q, kind);
    assert.equal(tok.decode(withSpecial), text);
    assert.equal(tok.decode(withSpecial, { skipSpecial: true }), 'What is 2+2?4<|end');
  }
});

test('decode: skipSpecial joins the bytes around a dropped special token; bad ids are refused', () => {
  for (const [kind, tok] of kinds) {
    const e = tok.encode('é'); // one char: may be a single token (char) or bytes (bpe)
    const bytesOfE = [...utf8('é')];
    // Split the two bytes of é by an end marker: skipping it gives é back whole.
    const split = [8 + bytesOfE[0]!, tok.specialId('end'), 8 + bytesOfE[1]!];
    assert.equal(tok.decode(split, { skipSpecial: true }), 'é', kind);
    assert.equal(tok.decode(split), '\ufffd<|end|>\ufffd', kind);
    assert.ok(e.length >= 1);
    assert.throws(() => tok.decode([tok.vocabSize]), /outside the vocabulary/);
    assert.throws(() => tok.decode([-1]), /outside the vocabulary/);
    assert.throws(() => tok.decode([1.5]), /outside the vocabulary/);
  }
});

test('lone surrogates (not UTF-8) encode as U+FFFD, like TextEncoder', () => {
  for (const [kind, tok] of kinds) {
    for (const s of ['a\ud800b', '\udc00', 'x\ud83d', '\ud83d\ud83d\ude00']) {
      const expected = toWellFormed(s);
      assert.equal(tok.decode(tok.encode(s)), expected, `${kind}: ${JSON.stringify(s)}`);
    }
  }
  // For BPE the ids are exactly those of the replaced string.
  assert.deepEqual(bpe.encode('a\ud800b'), bpe.encode('a\ufffdb'));
});

test('char tokenizer: alphabet by frequency after the byte tokens, unknown characters fall back to bytes', () => {
  const tok = CharTokenizer.train(['bbbaac', 'c', 'c'], {});
  // c: 3, b: 3, a: 2; ties broken by code point.
  assert.equal(tok.vocabSize, 8 + 256 + 3);
  assert.deepEqual([tok.tokenString(264), tok.tokenString(265), tok.tokenString(266)], ['b', 'c', 'a']);
  assert.equal(tok.tokenString(8), '<0x00>');
  assert.equal(tok.tokenString(8 + 255), '<0xFF>');
  assert.deepEqual(tok.encode('abc'), [266, 264, 265]);
  // 'é' is unknown: its two UTF-8 bytes.
  assert.deepEqual(tok.encode('aé'), [266, 8 + 0xc3, 8 + 0xa9]);
  assert.equal(tok.decode([266, 8 + 0xc3, 8 + 0xa9]), 'aé');
  // vocabSize caps the alphabet; minFrequency drops rare characters.
  assert.equal(CharTokenizer.train(['bbbaac'], { vocabSize: 8 + 256 + 1 }).tokenString(264), 'b');
  assert.equal(CharTokenizer.train(['bbbaac'], { minFrequency: 2 }).vocabSize, 8 + 256 + 2);
  assert.throws(() => CharTokenizer.train(['x'], { vocabSize: 100 }), /vocabSize/);
  // Lone surrogates in training text are not characters.
  assert.equal(CharTokenizer.train(['\ud800']).vocabSize, 8 + 256);
});

test('bpe: byte tokens 8..263 in byte order with GPT-2 byte-level names; merges make tokens', () => {
  for (let b = 0; b < 256; b++) assert.equal(bpe.tokenString(8 + b), BYTE_TO_CHAR[b]);
  assert.equal(bpe.tokenString(8 + 0x20), 'Ġ');
  assert.equal(bpe.vocabSize, 600);
  assert.equal(bpe.merges.length, 600 - 264);
  // Frequent words become single tokens.
  assert.equal(bpe.encode(' the').length, 1);
  assert.ok(bpe.encode(corpus.slice(0, 5000)).length < utf8(corpus.slice(0, 5000)).length / 2.5);
});

/** Brute force: recount every pair over the distinct words each step; same rules as the trainer. */
function naiveMerges(texts: string[], vocabSize: number, minFrequency: number): [number, number][] {
  const counts = new Map<string, number>();
  for (const t of texts) for (const w of t.match(BYTE_LEVEL_PATTERN) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  const words = [...counts].map(([w, c]) => ({ s: Array.from(utf8(w), (b) => 8 + b), c }));
  const strs = [...Object.values(SPECIAL_TOKENS), ...BYTE_TO_CHAR];
  const merges: [number, number][] = [];
  while (strs.length < vocabSize) {
    const pc = new Map<number, number>();
    for (const { s, c } of words)
      for (let i = 0; i + 1 < s.length; i++)
        pc.set(pairKey(s[i]!, s[i + 1]!), (pc.get(pairKey(s[i]!, s[i + 1]!)) ?? 0) + c);
    let best = -1;
    let bestC = 0;
    for (const [k, c] of pc) if (c > bestC || (c === bestC && k < best)) [best, bestC] = [k, c];
    if (best < 0 || bestC < minFrequency) break;
    const l = Math.floor(best / 2 ** 21);
    const r = best - l * 2 ** 21;
    let id = strs.indexOf(strs[l]! + strs[r]!);
    if (id < 8) {
      id = strs.length;
      strs.push(strs[l]! + strs[r]!);
    }
    merges.push([l, r]);
    for (const w of words) {
      const out: number[] = [];
      for (let i = 0; i < w.s.length; ) {
        if (i + 1 < w.s.length && w.s[i] === l && w.s[i + 1] === r) {
          out.push(id);
          i += 2;
        } else out.push(w.s[i++]!);
      }
      w.s = out;
    }
  }
  return merges;
}

test('bpe training: incremental pair bookkeeping gives the same merges as brute-force recounting', () => {
  const rng = new Rng(3);
  const texts = [
    syntheticCorpus(5, 3000),
    'aaaa aaaaaaa aaa bbbb abab ababab',
    ...Array.from({ length: 30 }, () => randomUnicode(rng, 30)),
  ];
  for (const minFrequency of [1, 2, 3]) {
    const fast = trainBpe(texts, { vocabSize: 520, minFrequency });
    assert.deepEqual(fast.merges, naiveMerges(texts, 520, minFrequency), `minFrequency ${minFrequency}`);
  }
});

test('bpe training: most frequent pair first, ties to the smaller ids, deterministic, stops at minFrequency', () => {
  const t = trainBpe(['ab ab ab cd'], { vocabSize: 300, minFrequency: 1 });
  // (a,b) occurs 3 times.
  assert.deepEqual(t.merges[0], [8 + 0x61, 8 + 0x62]);
  // Later ties of count 1: (Ġ,c) before (c,d) because Ġ is byte 0x20.
  const tie = trainBpe(['cd ef'], { vocabSize: 300, minFrequency: 1 });
  assert.deepEqual(tie.merges[0], [8 + 0x20, 8 + 0x65]);
  assert.deepEqual(tie.merges[1], [8 + 0x63, 8 + 0x64]);
  // minFrequency 2: pairs seen once are never merged, so training stops short of vocabSize.
  const few = trainBpe(['ab ab cd'], { vocabSize: 300 });
  assert.deepEqual(few.merges, [[8 + 0x61, 8 + 0x62]]);
  assert.equal(few.vocabSize, 265);
  const again = trainBpe([corpus], { vocabSize: 600 });
  assert.deepEqual(again.merges, bpe.merges);
  assert.throws(() => trainBpe([corpus], { vocabSize: 100 }), /vocabSize/);
});

/** Reference merge order: repeatedly merge the lowest-rank adjacent pair, leftmost first, one at a time. */
function naiveEncodeWord(tok: BpeTokenizer, bytes: Uint8Array): number[] {
  const rank = new Map(tok.merges.map(([l, r], i) => [pairKey(l, r), i]));
  const idOf = new Map(Array.from({ length: tok.vocabSize }, (_, id) => [tok.tokenString(id), id]));
  let s = Array.from(bytes, (b) => 8 + b);
  for (;;) {
    let best = -1;
    let bestRank = Infinity;
    for (let i = 0; i + 1 < s.length; i++) {
      const r = rank.get(pairKey(s[i]!, s[i + 1]!));
      if (r !== undefined && r < bestRank) [best, bestRank] = [i, r];
    }
    if (best < 0) return s;
    const merged = idOf.get(tok.tokenString(s[best]!) + tok.tokenString(s[best + 1]!))!;
    s = [...s.slice(0, best), merged, ...s.slice(best + 2)];
  }
}

test('bpe encodeWord (heap) agrees with the one-merge-at-a-time reference, long words included', () => {
  const rng = new Rng(11);
  const words = [
    ...(corpus.slice(0, 20000).match(BYTE_LEVEL_PATTERN) ?? []),
    ' '.repeat(200),
    'the'.repeat(150),
    '1234'.repeat(100),
  ];
  for (let i = 0; i < 200; i++) words.push(randomUnicode(rng, 20));
  for (const w of words) assert.deepEqual(bpe.encodeWord(utf8(w)), naiveEncodeWord(bpe, utf8(w)), JSON.stringify(w));
});

test('chat layout: role markers only come from specialId, content ids never collide with them', () => {
  for (const [, tok] of kinds) {
    const ids = [
      tok.bosId,
      tok.specialId('user'),
      ...tok.encode('<|assistant|>hi'),
      tok.specialId('end'),
      tok.specialId('assistant'),
    ];
    assert.equal(ids.filter((id) => id === tok.specialId('assistant')).length, 1);
    assert.equal(tok.decode(ids), '<|bos|><|user|><|assistant|>hi<|end|><|assistant|>');
  }
});

test('repeated encode (served from the per-word cache) gives identical ids', () => {
  const a = bpe.encode(corpus);
  const b = bpe.encode(corpus);
  assert.deepEqual(a, b);
  assert.equal(bpe.decode(a), corpus);
});
