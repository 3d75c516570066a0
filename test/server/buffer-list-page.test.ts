// `buffer/list` without `offset` (issue 40, item 24) reached SQL as NaN and failed with "datatype
// mismatch", naming nothing. A missing offset is 0; a page number that is not one names its field.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { makeBuffer } from '../../tools/make-buffer.js';
import { spawnServe } from '../../tools/spawn-serve.js';

const s = spawnServe(['--workspace', tmpdir()]);
after(() => s.close());

test('buffer/list: offset defaults to 0; a bad offset or limit is refused by field', async () => {
  await s.request('buffer/open', { path: await makeBuffer(12) });
  const page = await s.request('buffer/list', { limit: 5 } as never);
  assert.equal(page.rows.length, 5);
  assert.equal(page.total, 12);
  for (const [params, field] of [
    [{ offset: 'x', limit: 5 }, 'offset'],
    [{ offset: -1, limit: 5 }, 'offset'],
    [{ offset: 0 }, 'limit'],
  ] as const)
    await assert.rejects(s.request('buffer/list', params as never), (e: Error) => {
      assert.match(e.message, new RegExp(`field '${field}': a whole number >= 0, got `));
      return true;
    });
});
