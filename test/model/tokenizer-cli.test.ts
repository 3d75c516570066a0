// `rft tokenizer train|encode|decode` run as a user runs them: node bin/rft.mjs from the TypeScript source.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadTokenizer } from '../../backend/model/tokenizer/index.js';
import { syntheticCorpus } from './tokenizer-strings.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'rft-tok-cli-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

function rft(args: string[], input?: string): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [join(root, 'bin', 'rft.mjs'), ...args], {
    cwd: root,
    input,
    encoding: 'utf8',
    env: { ...process.env, RFT_FROM_SOURCE: '1' },
  });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

const tasks = join(dir, 'tasks.jsonl');
const notes = join(dir, 'notes.txt');
writeFileSync(
  tasks,
  Array.from({ length: 200 }, (_, i) =>
    JSON.stringify({ id: `t${i}`, prompt: `What is ${i} + ${i}? Explain the answer.`, answer: String(2 * i) }),
  )
    .concat(['{ not json'])
    .join('\n'),
);
writeFileSync(notes, syntheticCorpus(4, 20_000));

test('train bpe on a JSONL taskset and a text file, then encode / decode through the CLI', () => {
  const out = join(dir, 'bpe');
  const r = rft(['tokenizer', 'train', tasks, notes, '--out', out, '--vocab-size', '400']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /tasks\.jsonl:201: not valid JSON/);
  const summary = JSON.parse(r.stdout);
  assert.equal(summary.kind, 'bpe');
  assert.equal(summary.vocabSize, 400);
  assert.equal(summary.skippedLines, 1);
  assert.ok(existsSync(join(out, 'tokenizer.json')));

  const text = 'What is 7 + 7? café 😀 <|user|>';
  const enc = rft(['tokenizer', 'encode', '--tokenizer', out, text]);
  assert.equal(enc.code, 0, enc.stderr);
  const ids = JSON.parse(enc.stdout);
  const tok = loadTokenizer(out);
  assert.deepEqual(ids, tok.encode(text));
  assert.ok(
    ids.every((id: number) => id >= 8),
    'plain text gives no special ids',
  );

  const special = rft(['tokenizer', 'encode', '--tokenizer', out, '--allow-special', text]);
  assert.deepEqual(JSON.parse(special.stdout), tok.encode(text, { allowSpecial: true }));

  const dec = rft(['tokenizer', 'decode', '--tokenizer', out, JSON.stringify(ids)]);
  assert.equal(dec.code, 0, dec.stderr);
  assert.equal(dec.stdout, text);
});

test('train a char tokenizer; encode reads stdin when no TEXT is given', () => {
  const out = join(dir, 'char');
  const r = rft(['tokenizer', 'train', notes, '--out', out, '--kind', 'char']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).kind, 'char');
  const enc = rft(['tokenizer', 'encode', '--tokenizer', out], 'line one\nline two ✓');
  assert.equal(enc.code, 0, enc.stderr);
  assert.deepEqual(JSON.parse(enc.stdout), loadTokenizer(out).encode('line one\nline two ✓'));
});

test('bad usage and bad files fail with a clear message and a non-zero exit', () => {
  const noOut = rft(['tokenizer', 'train', notes]);
  assert.equal(noOut.code, 2, 'a command line the parser refuses exits 2');
  assert.match(noOut.stderr, /--out is required/);
  const badKind = rft(['tokenizer', 'train', notes, '--out', join(dir, 'x'), '--kind', 'wordpiece']);
  assert.match(badKind.stderr, /--kind must be bpe or char/);
  const broken = join(dir, 'broken');
  rft(['tokenizer', 'train', notes, '--out', broken, '--kind', 'char']);
  writeFileSync(join(broken, 'tokenizer.json'), '{"model": {"type": "Unigram"}}');
  const enc = rft(['tokenizer', 'encode', '--tokenizer', broken, 'hi']);
  assert.equal(enc.code, 1);
  assert.match(enc.stderr, /broken\/tokenizer\.json: field 'model\.type': expected 'BPE'/);
});
