// How run configs read their files: a `format:` mapping (or an experts section) makes the file
// validate as the run loads it; paths are relative to the config; files without a mapping are
// read plainly (not listed); a config that does not parse names nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import '../../tools/fake-vscode/harness.js';

const { readingsOf } = await import('../../src/taskset-readings.js');

test('taskset, eval and experts with format mappings, relative to the config', () => {
  const r = readingsOf(
    '/w/cfg/train.rft.yaml',
    [
      'taskset:',
      '  path: ../tasksets/words.jsonl',
      '  domain: math',
      '  format: { prompt_key: question, id_key: uid }',
      'eval:',
      '  path: heldout.jsonl',
      'experts:',
      '  path: /data/experts.jsonl',
      '  format:',
      '    response_key: completion',
    ].join('\n'),
  );
  assert.deepEqual(Object.fromEntries(r), {
    '/w/tasksets/words.jsonl': { format: { prompt_key: 'question', id_key: 'uid' }, role: 'task', domain: 'math' },
    '/data/experts.jsonl': { format: { response_key: 'completion' }, role: 'expert' },
  });
});

test('built-in tasksets and broken YAML name no file', () => {
  assert.equal(readingsOf('/w/a.rft.yaml', 'taskset:\n  builtin: reverse\n').size, 0);
  assert.equal(readingsOf('/w/a.rft.yaml', 'taskset: [\n').size, 0);
});

test('a config that stops parsing (one mistyped indent) keeps its last good reading of the files (issue 40 item 10)', () => {
  const good = 'experts:\n  path: experts.jsonl\n  format: { prompt_key: input, response_key: reference_output }\n';
  const want = {
    '/p/experts.jsonl': { format: { prompt_key: 'input', response_key: 'reference_output' }, role: 'expert' },
  };
  assert.deepEqual(Object.fromEntries(readingsOf('/p/train.rft.yaml', good)), want);
  const typo = good.replace('  format:', '   format:');
  assert.deepEqual(Object.fromEntries(readingsOf('/p/train.rft.yaml', typo)), want, 'the last good reading');
  // Fixed and changed: the new reading; a config that never parsed names nothing.
  assert.deepEqual(Object.fromEntries(readingsOf('/p/train.rft.yaml', good.replace('input', 'question'))), {
    '/p/experts.jsonl': { format: { prompt_key: 'question', response_key: 'reference_output' }, role: 'expert' },
  });
  assert.equal(readingsOf('/p/other.rft.yaml', typo).size, 0);
});
