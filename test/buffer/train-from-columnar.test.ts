// buffer.train_from from a Parquet file (DuckDB converted a JSONL export): the rows copied, and a
// bad row refuses the source by FILE:ROW: field.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/index.js';
import { importTrainFrom } from '../../backend/coordinator/train-from.js';
import { duck } from './columnar-fixtures.js';
import { makeExp } from './storage-helpers.js';
import { tempDir } from './taskset-helpers.js';

const rows = Array.from({ length: 6 }, (_, i) => makeExp(`e${i}`, { modelVersion: i % 3, runId: 'src' }));

async function imported(file: string): Promise<string[]> {
  const store = await openStore(':memory:');
  try {
    const r = await importTrainFrom(store, 'dst', { path: file, min_version: 1 });
    assert.deepEqual([r.imported, r.skipped], [4, 2]);
    return (await store.list({ runId: 'dst', limit: 100 })).map((e) => e.id).sort();
  } finally {
    await store.close();
  }
}

test('train_from a Parquet file: the rows of the version bound copied, a bad row named by file:row: field', async () => {
  const dir = tempDir();
  const jsonl = join(dir, 'src.jsonl');
  writeFileSync(jsonl, rows.map((e) => JSON.stringify(e)).join('\n') + '\n');
  const pq = join(dir, 'src.parquet');
  await duck(`COPY (SELECT * FROM read_json('${jsonl}')) TO '${pq}' (FORMAT parquet, COMPRESSION zstd)`);
  assert.deepEqual(await imported(pq), ['src/e1', 'src/e2', 'src/e4', 'src/e5']);
  const bad = join(dir, 'bad.parquet');
  await duck(
    `COPY (SELECT * REPLACE (CASE WHEN id = 'e4' THEN 'maybe' ELSE status END AS status) FROM read_json('${jsonl}')) TO '${bad}' (FORMAT parquet)`,
  );
  const store = await openStore(':memory:');
  try {
    await assert.rejects(
      () => importTrainFrom(store, 'dst', { path: bad, min_version: 0 }),
      new RegExp(`^InputError: ${bad}:5: field 'status': `),
    );
  } finally {
    await store.close();
  }
});
