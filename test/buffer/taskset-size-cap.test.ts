// A taskset over the size cap (issue 40, item 24: a 2 GiB taskset ended in an internal error naming
// no file) is refused by name and size before a byte of it is read. The file here is sparse: it
// takes no disk.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { loadTaskset } from '../../backend/buffer/taskset/index.js';
import { MAX_BYTES, readRegularFile } from '../../backend/core/regular-file.js';
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
