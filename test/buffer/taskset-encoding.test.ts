// A UTF-16 or binary file given as a taskset (issue 40, item 24) was reported as "invalid UTF-8" at
// every line (or, all NUL, as records that are not JSON). It is now named for what it is, once, by file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadTaskset } from '../../backend/buffer/taskset/index.js';
import { tempDir } from './taskset-helpers.js';

const text = '{"id":"a","prompt":"1+1","answer":"2"}\n{"id":"b","prompt":"2+2","answer":"4"}\n';
const utf16be = (s: string) => Buffer.from(s, 'utf16le').swap16();

test('UTF-16 (with or without a byte order mark) and binary files are named as such', async () => {
  const dir = tempDir('rft-encoding-');
  const cases: [string, Buffer, RegExp][] = [
    [
      'le-bom.jsonl',
      Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]),
      /is UTF-16 \(little-endian byte order mark\): save it as UTF-8/,
    ],
    [
      'be-bom.jsonl',
      Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be(text)]),
      /is UTF-16 \(big-endian byte order mark\)/,
    ],
    [
      'le.csv',
      Buffer.from('id,prompt,answer\na,1+1,2\n', 'utf16le'),
      /is UTF-16 \(little-endian, no byte order mark: every other byte is NUL\)/,
    ],
    [
      'be.json',
      utf16be(JSON.stringify([{ id: 'a', prompt: 'x', answer: '1' }])),
      /is UTF-16 \(big-endian, no byte order mark/,
    ],
    ['zeros.jsonl', Buffer.alloc(5000), /is binary \(4096 NUL bytes in its first 4096\)/],
  ];
  for (const [name, bytes, why] of cases) {
    const file = join(dir, name);
    writeFileSync(file, bytes);
    await assert.rejects(loadTaskset(file), (e: Error) => {
      assert.equal(e.name, 'InputError', `${name}: ${e.message}`);
      assert.ok(e.message.startsWith(`${file}: is `), e.message);
      assert.match(e.message, why);
      assert.doesNotMatch(e.message, /invalid UTF-8/);
      return true;
    });
  }
  // UTF-8 text with a stray NUL in one record is still read record by record.
  const file = join(dir, 'ok.jsonl');
  writeFileSync(file, `${text}{"id":"c","prompt":"\u0000","answer":"1"}\n`);
  const r = await loadTaskset(file);
  assert.deepEqual(r.tasks.map((t) => t.id).slice(0, 2), ['a', 'b']);
});
