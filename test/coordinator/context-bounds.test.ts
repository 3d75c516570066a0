// Context lengths out of range (issue 40, item 24): `model.max_seq_len: 1e9` ended a run in an
// unnamed "Invalid typed array length", and a model whose config.json has `max_position_embeddings:
// 1` in "generate: prompt ... leaves no room" with a stack. Both are refused up front by field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRunConfig } from '../../backend/coordinator/load-config.js';
import { parseHfConfig } from '../../backend/model/hf/config.js';
import { makeHfModel, TINY_QWEN2 } from '../../tools/hf-model.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-context-bounds-'));

test('model.max_seq_len of 1e9 is refused by field', () => {
  const f = join(dir, 'c.yaml');
  writeFileSync(f, 'taskset:\n  builtin: arith\nworkflow:\n  reward: math_answer\nmodel:\n  max_seq_len: 1000000000\n');
  assert.throws(() => loadRunConfig(f), /field 'model\.max_seq_len': at most 131072 tokens/);
  writeFileSync(f, 'taskset:\n  builtin: arith\nworkflow:\n  reward: math_answer\nmodel:\n  max_seq_len: 4096\n');
  assert.equal(loadRunConfig(f).model.max_seq_len, 4096);
});

test('max_position_embeddings of 1 in config.json is refused by file and field', () => {
  const m = makeHfModel(join(dir, 'm'), TINY_QWEN2);
  const file = join(m, 'config.json');
  const raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  assert.throws(
    () => parseHfConfig({ ...raw, max_position_embeddings: 1 }, file),
    new RegExp(`^InputError: ${file}: field 'max_position_embeddings': 1 is too short a context`, 'm'),
  );
  assert.equal(parseHfConfig(raw, file).config.maxSeqLen > 1, true);
});
