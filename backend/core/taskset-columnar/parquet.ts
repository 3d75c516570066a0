// Parquet tasksets, read one row group at a time (hyparquet: the footer first, then each group's
// rows by rowStart/rowEnd), so a file of many GB streams instead of being loaded whole. Every codec
// the hub's files use (snappy, zstd, gzip, brotli, lz4) through hyparquet-compressors. A row group
// that cannot be decoded is one error naming its rows; the other groups still load.
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import type { FileMetaData } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import type { RawRecord } from '../taskset-text/index.js';
import { type BigNotes, plainValue } from './values.js';
import type { ColumnInfo, ReadOptions } from './types.js';

async function open(file: string) {
  const buf = await asyncBufferFromFile(file);
  let metadata: FileMetaData;
  try {
    metadata = await parquetMetadataAsync(buf);
  } catch (e) {
    throw new Error(`${file}: not a readable Parquet file (${(e as Error).message})`);
  }
  return { buf, metadata };
}

/** Columns (top level, with their Parquet type) and the row count, from the footer alone. */
export async function parquetInfo(file: string): Promise<ColumnInfo> {
  const { metadata } = await open(file);
  const tree = parquetSchema(metadata);
  const columns = tree.children.map((c) => ({
    name: c.element.name,
    type: c.children.length ? (c.element.converted_type ?? 'STRUCT') : (c.element.type ?? 'GROUP'),
  }));
  return { columns, rows: Number(metadata.num_rows) };
}

export async function* readParquet(file: string, notes: BigNotes, opts: ReadOptions = {}): AsyncGenerator<RawRecord> {
  const { buf, metadata } = await open(file);
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  let start = 0;
  for (const [g, group] of metadata.row_groups.entries()) {
    if (start >= limit) return;
    const n = Number(group.num_rows);
    const end = Math.min(start + n, limit);
    let rows: Record<string, unknown>[];
    try {
      // utf8: false: only columns typed as text become strings; raw binary (image bytes) stays bytes.
      rows = await parquetReadObjects({ file: buf, metadata, rowStart: start, rowEnd: end, compressors, utf8: false });
    } catch (e) {
      yield {
        line: start + 1,
        field: '(row group)',
        error: `row group ${g} (rows ${start + 1}-${start + n}) cannot be read: ${(e as Error).message} (its ${n} rows skipped)`,
      };
      start += n;
      continue;
    }
    for (const [i, row] of rows.entries()) {
      const value: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(row)) value[k] = plainValue(v, k, notes);
      yield { line: start + i + 1, value };
    }
    start += n;
  }
}
