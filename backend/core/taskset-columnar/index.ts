// Columnar taskset files (Parquet, Arrow IPC), read from the file a row group / record batch at a
// time into the same raw records the text readers give (line = the 1-based row in the file), and the
// dataset folders (hub cache, split shards) whose files they are.
import type { RawRecord } from '../taskset-text/index.js';
import { arrowInfo, readArrow } from './arrow.js';
import { parquetInfo, readParquet } from './parquet.js';
import type { ColumnInfo, ReadOptions } from './types.js';
import type { BigNotes } from './values.js';

export type { ColumnInfo, ReadOptions } from './types.js';
export { bigNoteLines, type BigNotes } from './values.js';
export { datasetFolder, splitFiles, splitOfFile, type DatasetFolder } from './hub.js';

export function readColumnar(
  file: string,
  format: 'parquet' | 'arrow',
  notes: BigNotes,
  opts: ReadOptions = {},
): AsyncGenerator<RawRecord> {
  return format === 'parquet' ? readParquet(file, notes, opts) : readArrow(file, notes, opts);
}

/** Columns and row count (Parquet: from the footer; Arrow: by reading its batches). */
export function columnarInfo(file: string, format: 'parquet' | 'arrow'): Promise<ColumnInfo> {
  return format === 'parquet' ? parquetInfo(file) : arrowInfo(file);
}
