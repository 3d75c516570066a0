// Invalid UTF-8 in a taskset is an error at its line, not U+FFFD in ids and prompts: in a line format
// the bad record is skipped and the others kept; a JSON or YAML file is refused at the line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTaskset, parseTasksetBytes } from '../../backend/buffer/taskset/index.js';
import { tempDir } from './taskset-helpers.js';

const bad = Buffer.from([0xff, 0xfe, 0x41]);
const line = (id: string, prompt: Buffer | string) =>
  Buffer.concat([Buffer.from(`{"id":"${id}","prompt":"`), Buffer.from(prompt), Buffer.from('","answer":"1"}\n')]);

test('JSONL: the line with invalid UTF-8 is reported and skipped; the rest are kept', async () => {
  const dir = tempDir('rft-utf8-');
  const file = join(dir, 't.jsonl');
  writeFileSync(file, Buffer.concat([line('a', 'one'), line('b', bad), line('c', 'thrée ✓')]));
  const r = await loadTaskset(file);
  assert.deepEqual(
    r.tasks.map((t) => t.id),
    ['a', 'c'],
  );
  assert.equal(r.tasks[1]!.prompt, 'thrée ✓');
  assert.ok(!r.tasks.some((t) => (t.prompt ?? '').includes('\uFFFD')));
  assert.deepEqual(
    r.errors.map((e) => [e.line, e.message]),
    [[2, 'invalid UTF-8 in this line (record skipped)']],
  );
  assert.equal(r.records, 3);
  // A real U+FFFD written as UTF-8 is valid text and kept.
  const ok = parseTasksetBytes(line('d', '\uFFFD'), 'x.jsonl');
  assert.equal(ok.tasks[0]!.prompt, '\uFFFD');
});

test('JSON: invalid UTF-8 refuses the file at its line', () => {
  const text = Buffer.concat([
    Buffer.from('[\n{"id":"a","prompt":"x","answer":"1"},\n{"id":"b","prompt":"'),
    bad,
    Buffer.from('","answer":"1"}\n]\n'),
  ]);
  assert.throws(
    () => parseTasksetBytes(text, 'f.json'),
    /^Error: f\.json:3: invalid UTF-8 in this line \(the file is not read\)/,
  );
});
