// Arrow IPC tasksets (the `datasets` library's cache holds Arrow stream files named *.arrow; the
// IPC file format is read too), one record batch at a time through apache-arrow's RecordBatchReader,
// so a large cache file streams.
import { open } from 'node:fs/promises';
import { RecordBatchReader } from 'apache-arrow';
import type { RawRecord } from '../taskset-text/index.js';
import type { ColumnInfo, ReadOptions } from './types.js';
import { type BigNotes, plainValue } from './values.js';

async function* batches(file: string) {
  const fh = await open(file, 'r');
  try {
    let reader: Awaited<ReturnType<typeof RecordBatchReader.from>>;
    try {
      reader = await RecordBatchReader.from(fh);
      await reader.open();
    } catch (e) {
      throw new Error(`${file}: not a readable Arrow IPC file or stream (${(e as Error).message})`);
    }
    for await (const batch of reader) yield batch;
  } finally {
    await fh.close();
  }
}

export async function arrowInfo(file: string): Promise<ColumnInfo> {
  let rows = 0;
  let columns: ColumnInfo['columns'] = [];
  for await (const b of batches(file)) {
    columns = b.schema.fields.map((f) => ({ name: f.name, type: String(f.type) }));
    rows += b.numRows;
  }
  return { columns, rows };
}

export async function* readArrow(file: string, notes: BigNotes, opts: ReadOptions = {}): AsyncGenerator<RawRecord> {
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  let row = 0;
  for await (const batch of batches(file)) {
    const names = batch.schema.fields.map((f) => f.name);
    const cols = names.map((_, c) => batch.getChildAt(c)!);
    for (let i = 0; i < batch.numRows; i++) {
      if (row >= limit) return;
      const value: Record<string, unknown> = {};
      names.forEach((k, c) => {
        value[k] = plainValue(cols[c]!.get(i), k, notes);
      });
      row++;
      yield { line: row, value };
    }
  }
}
