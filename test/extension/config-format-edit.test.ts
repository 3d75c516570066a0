// The mapping written into a run config: the section naming the file gets `format:`, comments kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'yaml';
import { sectionsNaming, withFormat } from '../../src/config-format-edit.js';

const CONFIG = [
  '# my run',
  'name: mine',
  'taskset:',
  '  path: mine/math.jsonl  # my own file',
  '  domain: math',
  'experts:',
  '  path: ../w/worked.jsonl',
  'trainer:',
  '  steps: 5',
  '',
].join('\n');

test('which sections name a file, relative to the config', () => {
  assert.deepEqual(sectionsNaming('/w/train.rft.yaml', CONFIG, '/w/mine/math.jsonl'), ['taskset']);
  assert.deepEqual(sectionsNaming('/w/train.rft.yaml', CONFIG, '/w/worked.jsonl'), ['experts']);
  assert.deepEqual(sectionsNaming('/w/train.rft.yaml', CONFIG, '/w/other.jsonl'), []);
  assert.deepEqual(sectionsNaming('/w/train.rft.yaml', 'taskset: [', '/w/mine/math.jsonl'), []);
});

test('withFormat sets the keys, keeps the comments and other keys', () => {
  const out = withFormat(CONFIG, 'taskset', { prompt_key: 'problem', response_key: 'final' });
  assert.match(out, /# my run/);
  assert.match(out, /# my own file/);
  assert.deepEqual(parse(out).taskset, {
    path: 'mine/math.jsonl',
    domain: 'math',
    format: { prompt_key: 'problem', response_key: 'final' },
  });
  // A second fix adds to the mapping, replacing only its own key.
  const again = withFormat(out, 'taskset', { response_key: 'answer_text', id_key: 'n' });
  assert.deepEqual(parse(again).taskset.format, { prompt_key: 'problem', response_key: 'answer_text', id_key: 'n' });
  assert.equal(parse(again).trainer.steps, 5);
});

test('a section that named another source becomes the file; broken YAML is refused', () => {
  const out = withFormat('taskset:\n  builtin: reverse\n', 'taskset', { prompt_key: 'problem' }, 'mine/math.jsonl');
  assert.deepEqual(parse(out).taskset, { path: 'mine/math.jsonl', format: { prompt_key: 'problem' } });
  assert.deepEqual(parse(withFormat('name: x\n', 'experts', { response_key: 'worked' }, 'worked.jsonl')).experts, {
    path: 'worked.jsonl',
    format: { response_key: 'worked' },
  });
  assert.throws(() => withFormat('taskset: [', 'taskset', { prompt_key: 'p' }), /does not parse/);
});
