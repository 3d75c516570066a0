// A YAML taskset with a "billion laughs" record (issue 40, item 24): the package's alias limit threw
// a bare ReferenceError that took the whole file down. Now that record is an error at its line and
// the valid records around it are kept.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTaskset } from '../../backend/buffer/taskset/load.js';

test('a billion-laughs record is an error at its line; the other records are kept', () => {
  const text = [
    '- id: a',
    '  prompt: "1+1"',
    '  answer: "2"',
    '- id: b',
    '  prompt: &a [x, x, x, x, x, x, x, x, x]',
    '  x: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]',
    '  y: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
    '  z: [*c, *c, *c, *c, *c, *c, *c, *c, *c]',
    '- id: c',
    '  prompt: "2+2"',
    '  answer: "4"',
    '',
  ].join('\n');
  const r = parseTaskset(text, 'tasks.yaml');
  assert.deepEqual(
    r.tasks.map((t) => t.id),
    ['a', 'c'],
  );
  assert.deepEqual(r.errors, [
    { file: 'tasks.yaml', line: 4, field: '(record)', message: 'bad YAML: its aliases expand to too much data' },
  ]);
});
