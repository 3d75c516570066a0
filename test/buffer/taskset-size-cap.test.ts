// A taskset over the size cap (issue 40, item 24: a 2 GiB taskset ended in an internal error naming
// no file) is refused by name and size before a byte of it is read. The file here is sparse: it
// takes no disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, existsSync, ftruncateSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { loadTaskset } from '../../backend/buffer/taskset/index.js';
import { MAX_BYTES, readRegularFile, readRegularFileAsync } from '../../backend/core/regular-file.js';
import { tempDir } from './taskset-helpers.js';

test('a taskset over the cap is refused by file and size, unread', async () => {
  const file = join(tempDir('rft-size-cap-'), 'huge.jsonl');
  const fd = openSync(file, 'w');
  ftruncateSync(fd, 2 * 1024 * 1024 * 1024);
  closeSync(fd);
  await assert.rejects(loadTaskset(file), (e: Error) => {
    assert.equal(e.name, 'InputError');
    assert.equal(
      e.message,
      `${file}: is 2048.0 MiB, over the limit of ${MAX_BYTES.taskset / 1024 / 1024}.0 MiB for this kind of file`,
    );
    return true;
  });
  assert.throws(() => readRegularFile(file, undefined, MAX_BYTES.taskset), /is 2048\.0 MiB, over the limit/);
});

test(
  'a file whose stat says 0 bytes (/proc) is read whole, and refused once it passes the cap',
  { skip: !existsSync('/proc/self/status') && 'no /proc' },
  async () => {
    const whole = readRegularFile('/proc/self/status', 'utf8');
    assert.match(whole, /^Name:/);
    assert.match(whole, /\nPid:\s+\d+/);
    assert.match((await readRegularFileAsync('/proc/self/status')).toString('utf8'), /\nPid:\s+\d+/);
    assert.throws(
      () => readRegularFile('/proc/self/status', 'utf8', 16),
      /^InputError: \/proc\/self\/status: is over the limit of 16 bytes for this kind of file/,
    );
    await assert.rejects(readRegularFileAsync('/proc/self/status', 16), /is over the limit of 16 bytes/);
  },
);
