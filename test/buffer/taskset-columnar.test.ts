// Parquet (written by DuckDB) and Arrow IPC (written by apache-arrow) tasksets: codecs, several row
// groups / batches, nested columns, chat columns, bad rows named by file:row:column.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';
import { formatTaskError, loadTaskset } from '../../backend/buffer/taskset/load.js';
import { copyParquet, duck, gsm8kSelect, writeArrow } from './columnar-fixtures.js';
import { tempDir } from './taskset-helpers.js';

const GSM = { prompt_key: 'question', response_key: 'answer' };
// Row 4322 has no question, row 100 an empty answer: the two bad rows of 5000.
const withBad = `SELECT CASE WHEN i = 4321 THEN NULL ELSE question END AS question, CASE WHEN i = 99 THEN '' ELSE answer END AS answer FROM (${gsm8kSelect(0, 5000, ', i')})`;

for (const codec of ['snappy', 'zstd', 'gzip']) {
  test(`Parquet (${codec}, several row groups): every row read in order, the bad rows named by file:row:column`, async () => {
    const f = join(tempDir(), `gsm-${codec}.parquet`);
    await duck(copyParquet(withBad, f, codec, 2048));
    const meta = await parquetMetadataAsync(await asyncBufferFromFile(f));
    assert.ok(meta.row_groups.length >= 2, `${meta.row_groups.length} row group(s)`);
    assert.equal(meta.row_groups[0]!.columns[0]!.meta_data!.codec, codec.toUpperCase());
    const r = await loadTaskset(f, { fields: GSM, defaultIds: true });
    assert.equal(r.records, 5000);
    assert.equal(r.tasks.length, 4998);
    assert.deepEqual(
      r.errors.map((e) => formatTaskError(e)),
      [`${f}:100: field 'answer': answer is empty`, `${f}:4322: field 'question': expected string, got null`],
    );
    // Rows across the group boundaries, in file order, each with its row as line.
    for (const row of [1, 2048, 2049, 4321, 4323, 5000]) {
      const k = r.lines.indexOf(row);
      assert.ok(k >= 0, `row ${row}`);
      assert.equal(r.tasks[k]!.prompt, `What is ${row - 1} plus 1?`);
      assert.equal(r.tasks[k]!.answer, String(row));
      assert.equal(r.tasks[k]!.id, `L${row}`);
    }
  });
}

test('Parquet nested columns: format paths into structs and lists, chat turns to prompt/answer, 64-bit integers', async () => {
  const dir = tempDir();
  const f = join(dir, 'nested.parquet');
  await duck(
    copyParquet(
      `SELECT {'q': 'What is ' || i || '?', 'tags': ['a', 'b']} AS meta, [{'text': 'ans ' || i}] AS outs, i::BIGINT AS small, 9007199254740993 + i AS huge FROM range(3) t(i)`,
      f,
      'zstd',
    ),
  );
  const r = await loadTaskset(f, {
    fields: { prompt_key: 'meta.q', response_key: 'outs[0].text', id_key: 'small' },
    defaultIds: true,
  });
  assert.deepEqual(r.errors, []);
  assert.deepEqual(
    r.tasks.map((t) => [t.id, t.prompt, t.answer]),
    [0, 1, 2].map((i) => [String(i), `What is ${i}?`, `ans ${i}`]),
  );
  // 2^53 + 1 is not a double: kept exact as text, and said so.
  assert.equal(r.tasks[0]!.metadata?.huge, '9007199254740993');
  assert.deepEqual(r.tasks[0]!.metadata?.meta, { q: 'What is 0?', tags: ['a', 'b'] });
  assert.match(r.notes?.[0] ?? '', /column 'huge': 3 integer\(s\) beyond 2\^53 read as text/);

  const chat = join(dir, 'chat.parquet');
  await duck(
    copyParquet(
      `SELECT [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'What is ' || i || '+1?'}, {'role': 'assistant', 'content': 'So #### ' || (i + 1)}] AS messages FROM range(2) t(i)`,
      chat,
      'snappy',
    ),
  );
  await duck(
    copyParquet(
      `SELECT 'c' || i AS id, [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'What is ' || i || '+1?'}, {'role': 'assistant', 'content': 'So #### ' || (i + 1)}] AS messages FROM range(2) t(i)`,
      join(dir, 'chat-ids.parquet'),
      'gzip',
    ),
  );
  const c = await loadTaskset(chat, { defaultIds: true });
  assert.deepEqual(c.errors, []);
  assert.equal(c.tasks[1]!.prompt, 'What is 1+1?');
  assert.equal(c.tasks[1]!.answer, '2');
  // The assistant's turn (the reference) is not among the messages the model is given.
  assert.deepEqual(c.tasks[1]!.messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'What is 1+1?' },
  ]);
  // `rft taskset validate` (no mapping, no default ids) reads the chat column as the run does.
  const plain = await loadTaskset(chat.replace('chat.parquet', 'chat-ids.parquet'));
  assert.deepEqual(plain.errors, []);
  assert.deepEqual(
    plain.tasks.map((t) => [t.id, t.prompt, t.answer, t.messages?.length]),
    [
      ['c0', 'What is 0+1?', '1', 2],
      ['c1', 'What is 1+1?', '2', 2],
    ],
  );
  const ex = await loadTaskset(chat, { role: 'expert', defaultIds: true });
  assert.equal(ex.tasks[0]!.metadata?.response, 'So #### 1');
});

for (const as of ['stream', 'file'] as const) {
  test(`Arrow IPC ${as} in several record batches: rows in order, a bad row named by file:row:column`, async () => {
    const f = join(tempDir(), `gsm-${as}.arrow`);
    const rows = Array.from({ length: 25 }, (_, i) => ({
      question: i === 17 ? '' : `What is ${i} plus 1?`,
      answer: `#### ${i + 1}`,
    }));
    writeArrow(f, rows, 10, as);
    const r = await loadTaskset(f, { fields: GSM, defaultIds: true });
    assert.equal(r.records, 25);
    assert.deepEqual(r.errors.map(formatTaskError), [`${f}:18: field 'question': prompt is empty`]);
    assert.equal(r.tasks.length, 24);
    assert.deepEqual([r.tasks[23]!.prompt, r.tasks[23]!.answer, r.lines[23]], ['What is 24 plus 1?', '25', 25]);
  });
}

test('a file that is no Parquet is refused naming the file; a text format as before', async () => {
  const dir = tempDir();
  const f = join(dir, 'cut.parquet');
  await duck(copyParquet(gsm8kSelect(0, 10), f, 'zstd'));
  truncateSync(f, 20);
  await assert.rejects(() => loadTaskset(f), new RegExp(`${f}: not a readable Parquet file`));
  const j = join(dir, 't.jsonl');
  writeFileSync(j, `${JSON.stringify({ id: 'a', prompt: 'p', answer: '1' })}\n`);
  assert.equal((await loadTaskset(j)).tasks.length, 1);
  await assert.rejects(
    () => loadTaskset(j, { split: 'train' }),
    /split 'train' chooses the split files of a dataset folder/,
  );
});
