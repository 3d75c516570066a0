// One tokenizer per checkpoint: a folder and its tokenizer.json load the same tokenizer (the real
// Qwen3 and Llama-3 files run by @huggingface/tokenizers, this project's own by its own loader), and
// the per-token text of a response reads as text, not as byte-level pieces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Tokenizer as HfLib } from '@huggingface/tokenizers';
import {
  CharTokenizer,
  loadTokenizer,
  saveTokenizer,
  tokenPieces,
  trainBpe,
} from '../../backend/model/tokenizer/index.js';
import { tokenizerDir } from '../../tools/hf-model.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'rft-tok-one-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const TEXT = 'Solve: 12 * 7 = 84. Then héllo wörld 你好 🙂 <|im_end|> done\n  indented';

function checkpointWith(name: 'qwen3' | 'llama3'): string {
  const ck = join(dir, name, 'v5');
  mkdirSync(ck, { recursive: true });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(tokenizerDir(name), f), join(ck, f));
  return ck;
}

for (const name of ['qwen3', 'llama3'] as const) {
  test(`${name}: the folder and its tokenizer.json give the same tokenizer, with @huggingface/tokenizers' ids`, () => {
    const ck = checkpointWith(name);
    const file = join(ck, 'tokenizer.json');
    // Before: the file went to the project's own loader ("field 'model.continuing_subword_prefix': not supported").
    const byFile = loadTokenizer(file);
    const byDir = loadTokenizer(ck);
    assert.equal(byFile.kind, 'hf');
    assert.equal(byDir.kind, 'hf');
    const lib = new HfLib(
      JSON.parse(readFileSync(file, 'utf8')),
      JSON.parse(readFileSync(join(ck, 'tokenizer_config.json'), 'utf8')),
    );
    const want = lib.encode(TEXT, { add_special_tokens: false }).ids;
    assert.deepEqual(byFile.encode(TEXT), want);
    assert.deepEqual(byDir.encode(TEXT), want);
    assert.deepEqual(
      [byFile.eosId, byFile.padId, byFile.bosId, byFile.vocabSize],
      [byDir.eosId, byDir.padId, byDir.bosId, byDir.vocabSize],
    );
    assert.equal(byFile.decode(want), TEXT);
  });

  test(`${name}: per-token text is readable; a character split across tokens shows on the token that completes it`, () => {
    const tok = loadTokenizer(checkpointWith(name));
    const ids = tok.encode(TEXT);
    const pieces = tokenPieces(tok, ids);
    assert.equal(pieces.length, ids.length);
    assert.equal(pieces.join(''), TEXT, 'the pieces put together are the text');
    for (const p of pieces) {
      assert.ok(!/[ĠĊ]/.test(p), `no byte-level piece shown raw: ${JSON.stringify(p)}`);
      assert.ok(!p.includes('\ufffd'), `no replacement character: ${JSON.stringify(pieces)}`);
    }
    // The emoji is 4 UTF-8 bytes; whichever tokens carry it, it appears whole in one piece.
    assert.ok(pieces.some((p) => p.includes('🙂')));
    assert.ok(pieces.includes(' done'));
    // Before: one decode per token, which shows U+FFFD for each part of a split character.
    const naive = ids.map((i) => tok.decode([i]));
    if (naive.join('') !== TEXT) assert.ok(naive.some((p) => p.includes('\ufffd')));
  });
}

test("the project's own tokenizers still load by file and folder (with and without tokenizer_config.json)", () => {
  const corpus = 'the quick brown fox jumps over the lazy dog 0123456789 '.repeat(40);
  for (const [kind, tok] of [
    ['bpe', trainBpe([corpus], { vocabSize: 400 })],
    ['char', CharTokenizer.train([corpus])],
  ] as const) {
    const d = join(dir, 'own', kind);
    saveTokenizer(tok, d);
    for (const t of [loadTokenizer(d), loadTokenizer(join(d, 'tokenizer.json'))]) {
      assert.equal(t.kind, kind);
      assert.deepEqual(t.encode('the lazy fox'), tok.encode('the lazy fox'));
    }
    const bare = join(dir, 'own', `${kind}-bare.json`);
    writeFileSync(bare, JSON.stringify(tok.toJSON()));
    assert.equal(loadTokenizer(bare).kind, kind);
    // 'é' and '🙂' go through byte fallback (not in the corpus): whole on the token that completes them.
    const pieces = tokenPieces(tok, tok.encode('fox é🙂'));
    assert.equal(pieces.join(''), 'fox é🙂');
    assert.ok(pieces.includes('🙂') && !pieces.some((p) => p.includes('\ufffd')), JSON.stringify(pieces));
  }
});

test('rft tokenizer encode / decode --tokenizer CK/tokenizer.json on the real Qwen tokenizer', () => {
  const ck = checkpointWith('qwen3');
  const rft = (args: string[]) =>
    spawnSync(process.execPath, [join(root, 'bin', 'rft.mjs'), ...args], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, RFT_FROM_SOURCE: '1' },
    });
  const want = loadTokenizer(ck).encode('héllo wörld');
  for (const where of [join(ck, 'tokenizer.json'), ck]) {
    const enc = rft(['tokenizer', 'encode', '--tokenizer', where, 'héllo wörld']);
    assert.equal(enc.status, 0, enc.stderr);
    assert.deepEqual(JSON.parse(enc.stdout), want);
  }
  const dec = rft(['tokenizer', 'decode', '--tokenizer', join(ck, 'tokenizer.json'), JSON.stringify(want)]);
  assert.equal(dec.status, 0, dec.stderr);
  assert.equal(dec.stdout, 'héllo wörld');
});
