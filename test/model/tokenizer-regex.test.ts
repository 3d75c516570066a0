// A tokenizer.json whose pre-tokenizer or normalizer regex backtracks catastrophically (issue 40,
// item 21): `(a+)+$` made `model generate` run for minutes on a 44-character prompt. Such a pattern
// (a group repeated without bound that itself repeats without bound) is refused at load, naming the
// file, the field and the regex; the patterns of real tokenizers pass.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nestedRepeat } from '../../backend/model/hf/regex-check.js';
import { HfTokenizer } from '../../backend/model/hf/tokenizer.js';
import { BYTE_LEVEL_PATTERN } from '../../backend/model/tokenizer/bytes.js';
import { tokenizerDir } from '../../tools/hf-model.js';

// biome-ignore lint/suspicious/noExplicitAny: tokenizer.json edited in place, deep paths
type Json = Record<string, any>;
const preRegex = (j: Json): string => j.pre_tokenizer.pretokenizers[0].pattern.Regex;

test('real tokenizers pass; repeated groups that repeat inside are found', () => {
  for (const name of ['qwen3', 'llama3'] as const) {
    const j = JSON.parse(readFileSync(join(tokenizerDir(name), 'tokenizer.json'), 'utf8')) as Json;
    assert.equal(nestedRepeat(preRegex(j)), undefined, name);
  }
  for (const ok of [
    BYTE_LEVEL_PATTERN.source,
    '(ab)+',
    '(a|b)*',
    'a+b+',
    '(?:\\s+\\S){0,3}',
    '[(]+',
    '\\(a+\\)+',
    '(?!\\S)\\s+',
  ])
    assert.equal(nestedRepeat(ok), undefined, ok);
  for (const bad of ['(a+)+$', '(\\w*\\s?)*$', '(?:x+){2,}', '((a)+b)*', '(?:[^x]+|y)+z'])
    assert.notEqual(nestedRepeat(bad), undefined, bad);
});

function withTokenizer(edit: (j: Json) => void): string {
  const d = mkdtempSync(join(tmpdir(), 'rft-tok-regex-'));
  cpSync(tokenizerDir('qwen3'), d, { recursive: true });
  const f = join(d, 'tokenizer.json');
  const j = JSON.parse(readFileSync(f, 'utf8')) as Json;
  edit(j);
  writeFileSync(f, JSON.stringify(j));
  return d;
}

test('a tokenizer.json with (a+)+$ as pre-tokenizer or normalizer pattern is refused at load by file, field and regex', () => {
  const pre = withTokenizer((j) => (j.pre_tokenizer.pretokenizers[0].pattern.Regex = '(a+)+$'));
  assert.throws(
    () => HfTokenizer.fromDir(pre),
    (e: Error) => {
      assert.match(
        e.message,
        new RegExp(
          `^${join(pre, 'tokenizer.json')}: field 'pre_tokenizer\\.pretokenizers\\[0\\]\\.pattern\\.Regex': regex "\\(a\\+\\)\\+\\$" repeats a group`,
        ),
      );
      return true;
    },
  );
  const norm = withTokenizer(
    (j) => (j.normalizer = { type: 'Replace', pattern: { Regex: '(\\w*\\s?)*$' }, content: ' ' }),
  );
  assert.throws(() => HfTokenizer.fromDir(norm), /field 'normalizer\.pattern\.Regex': regex "\(\\\\w\*\\\\s\?\)\*\$"/);
  // The unchanged tokenizer still loads.
  assert.ok(HfTokenizer.fromDir(withTokenizer(() => undefined)).vocabSize > 150_000);
});
