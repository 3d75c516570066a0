import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InputError } from '../../backend/core/errors.js';
import {
  CharTokenizer,
  loadTokenizer,
  readCorpusFile,
  saveTokenizer,
  tokenizerFromJSON,
  trainBpe,
  type Tokenizer,
} from '../../backend/model/tokenizer/index.js';
import { syntheticCorpus } from './tokenizer-strings.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-tok-io-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));
const corpus = syntheticCorpus(9, 30_000);
const bpe = trainBpe([corpus], { vocabSize: 500 });
const char = CharTokenizer.train([corpus]);
const sample = 'def f(x):\n    return x * 2  # café 数学 😀 <|user|>';

function roundTrip(tok: Tokenizer, name: string): Tokenizer {
  const file = saveTokenizer(tok, join(dir, name));
  assert.equal(file, join(dir, name, 'tokenizer.json'));
  const cfg = JSON.parse(readFileSync(join(dir, name, 'tokenizer_config.json'), 'utf8'));
  assert.equal(cfg.bos_token, '<|bos|>');
  assert.equal(cfg.clean_up_tokenization_spaces, false);
  return loadTokenizer(join(dir, name));
}

test('save -> load gives the same kind, vocabulary, ids and JSON (directory or file path)', () => {
  for (const [name, tok] of [
    ['bpe', bpe],
    ['char', char],
  ] as const) {
    const back = roundTrip(tok, name);
    assert.equal(back.kind, tok.kind);
    assert.equal(back.vocabSize, tok.vocabSize);
    assert.deepEqual(back.encode(corpus), tok.encode(corpus));
    assert.deepEqual(back.encode(sample, { allowSpecial: true }), tok.encode(sample, { allowSpecial: true }));
    assert.deepEqual(JSON.parse(JSON.stringify(back.toJSON())), JSON.parse(JSON.stringify(tok.toJSON())));
    assert.equal(loadTokenizer(join(dir, name, 'tokenizer.json')).vocabSize, tok.vocabSize);
  }
});

test('merges in the ["a", "b"] form load too', () => {
  const json = JSON.parse(JSON.stringify(bpe.toJSON()));
  json.model.merges = json.model.merges.map((m: string) => m.split(' '));
  assert.deepEqual(tokenizerFromJSON(json).encode(corpus), bpe.encode(corpus));
});

// biome-ignore lint/suspicious/noExplicitAny: mutates arbitrary tokenizer.json shapes
type Mutate = (j: any) => void;
const BAD: [string, 'bpe' | 'char', Mutate, RegExp][] = [
  ['model not BPE', 'bpe', (j) => (j.model.type = 'WordPiece'), /field 'model.type'.*expected 'BPE'/],
  ['no model', 'bpe', (j) => delete j.model, /field 'model': expected an object/],
  ['normalizer', 'bpe', (j) => (j.normalizer = { type: 'NFC' }), /field 'normalizer'/],
  ['unk token', 'bpe', (j) => (j.model.unk_token = '<unk>'), /field 'model.unk_token'/],
  [
    'missing special',
    'bpe',
    (j) => j.added_tokens.splice(4, 1),
    /field 'added_tokens': missing the special token '<\|user\|>'/,
  ],
  ['non-special added', 'bpe', (j) => (j.added_tokens[0].special = false), /field 'added_tokens\[0\].special'/],
  ['lstrip added', 'char', (j) => (j.added_tokens[1].lstrip = true), /field 'added_tokens\[1\].lstrip'/],
  ['added id mismatch', 'bpe', (j) => (j.added_tokens[2].id = 5), /field 'added_tokens\[2\].id'/],
  ['duplicate id', 'bpe', (j) => (j.model.vocab['Ġthe'] = 9), /field 'model.vocab\["Ġthe"\]'.*id 9 is also given/],
  ['id out of range', 'bpe', (j) => (j.model.vocab['Ġthe'] = 99999), /field 'model.vocab\["Ġthe"\]'.*0\.\.499/],
  [
    'merge of unknown token',
    'bpe',
    (j) => (j.model.merges[3] = 'zzz q'),
    /field 'model.merges\[3\]'.*"zzz" is not in model.vocab/,
  ],
  [
    'merge not a pair',
    'bpe',
    (j) => (j.model.merges[0] = 'a'),
    /field 'model.merges\[0\]': expected exactly two tokens/,
  ],
  [
    'merged token missing',
    'bpe',
    (j) => (j.model.merges[1] = 'Q Z'),
    /field 'model.merges\[1\]'.*"QZ" is not in model.vocab/,
  ],
  ['wrong pre-tokenizer', 'bpe', (j) => (j.pre_tokenizer = { type: 'Whitespace' }), /field 'pre_tokenizer'/],
  ['prefix space', 'bpe', (j) => (j.pre_tokenizer.add_prefix_space = true), /field 'pre_tokenizer.add_prefix_space'/],
  ['bpe decoder', 'bpe', (j) => (j.decoder = { type: 'Fuse' }), /field 'decoder'/],
  [
    'bpe non byte-level token',
    'bpe',
    (j) => {
      j.model.vocab[' the'] = j.model.vocab['Ġthe'];
      delete j.model.vocab['Ġthe'];
    },
    /field 'model.vocab\[" the"\]'.*is not a byte-level string/,
  ],
  ['char without byte fallback', 'char', (j) => (j.model.byte_fallback = false), /field 'model.byte_fallback'/],
  [
    'char missing byte token',
    'char',
    (j) => {
      j.model.vocab['x1'] = j.model.vocab['<0x41>'];
      delete j.model.vocab['<0x41>'];
    },
    /missing the byte-fallback token '<0x41>'/,
  ],
  [
    'char multi-char token',
    'char',
    (j) => {
      j.model.vocab['ab'] = j.model.vocab['a'];
      delete j.model.vocab['a'];
    },
    /field 'model.vocab\["ab"\]'.*one well-formed character/,
  ],
  ['char with merges', 'char', (j) => (j.model.merges = ['a b']), /field 'model.merges'/],
  ['char decoder', 'char', (j) => (j.decoder = { type: 'ByteLevel' }), /field 'decoder'/],
];

test('malformed tokenizer.json files are refused with the file and the bad field named', () => {
  for (const [what, kind, mutate, pattern] of BAD) {
    const json = JSON.parse(JSON.stringify((kind === 'bpe' ? bpe : char).toJSON()));
    mutate(json);
    const sub = join(dir, 'bad', what.replace(/\W+/g, '-'));
    mkdirSync(sub, { recursive: true });
    const file = join(sub, 'tokenizer.json');
    writeFileSync(file, JSON.stringify(json));
    assert.throws(
      () => loadTokenizer(sub),
      (e: unknown) => {
        assert.ok(e instanceof InputError, `${what}: ${String(e)}`);
        assert.ok(e.message.startsWith(file + ': '), `${what}: ${e.message}`);
        assert.match(e.message, pattern, what);
        return true;
      },
    );
  }
});

test('unreadable input: missing path, missing tokenizer.json, invalid JSON', () => {
  assert.throws(() => loadTokenizer(join(dir, 'nope')), /nope: no such file/);
  mkdirSync(join(dir, 'empty'), { recursive: true });
  assert.throws(() => loadTokenizer(join(dir, 'empty')), /empty\/tokenizer\.json: no tokenizer\.json/);
  writeFileSync(join(dir, 'empty', 'tokenizer.json'), '{"model": ');
  assert.throws(() => loadTokenizer(join(dir, 'empty')), /tokenizer\.json: not valid JSON/);
});

test('training text from taskset files: text fields of JSONL / JSON records, raw text otherwise; bad lines reported', () => {
  const jsonl = join(dir, 'tasks.jsonl');
  writeFileSync(
    jsonl,
    [
      JSON.stringify({ id: 't1', prompt: 'What is 2+2?', answer: '4', metadata: { source: 'x' } }),
      '{ broken',
      '',
      JSON.stringify({
        id: 't2',
        messages: [{ role: 'user', content: 'Hi there' }],
        choices: ['A', 'B'],
        difficulty: 0.5,
      }),
    ].join('\n'),
  );
  const r = readCorpusFile(jsonl);
  assert.deepEqual(r.texts, ['What is 2+2?', '4', 'Hi there', 'A', 'B']);
  assert.equal(r.problems.length, 1);
  assert.match(r.problems[0]!.message, /tasks\.jsonl:2: not valid JSON/);
  const json = join(dir, 'tasks.json');
  writeFileSync(json, JSON.stringify({ tasks: [{ question: 'Q1', solution: 'S1', id: 'a' }] }));
  assert.deepEqual(readCorpusFile(json).texts, ['Q1', 'S1']);
  const md = join(dir, 'notes.md');
  writeFileSync(md, '# Title\nraw text');
  assert.deepEqual(readCorpusFile(md).texts, ['# Title\nraw text']);
  writeFileSync(join(dir, 'bad.json'), '[1,');
  assert.throws(() => readCorpusFile(join(dir, 'bad.json')), /bad\.json: not valid JSON/);
});
