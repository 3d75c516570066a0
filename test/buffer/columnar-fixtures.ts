// Parquet files written by an independent writer (DuckDB), Arrow IPC files by apache-arrow's own
// writer: the readers under test never wrote what they read.
import { writeFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { type RecordBatch, Table, tableFromJSON, tableToIPC } from 'apache-arrow';

/** Run DuckDB statements (COPY ... TO 'x.parquet') in a fresh in-memory database. */
export async function duck(...sql: string[]): Promise<void> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    for (const s of sql) await conn.run(s);
  } finally {
    conn.closeSync();
    db.closeSync();
  }
}

/** `COPY (select) TO file (FORMAT parquet, COMPRESSION codec, ROW_GROUP_SIZE n)`. */
export function copyParquet(select: string, file: string, codec: string, rowGroup = 2048): string {
  return `COPY (${select}) TO '${file.replace(/'/g, "''")}' (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE ${rowGroup})`;
}

/** GSM8K-shaped rows i in [from, to): `question`, `answer` with a `#### N` final line. */
export function gsm8kSelect(from: number, to: number, extra = ''): string {
  return `SELECT 'What is ' || i || ' plus 1?' AS question, 'It is ' || i || ' + 1.\n#### ' || (i + 1) AS answer${extra} FROM range(${from}, ${to}) t(i)`;
}

/** An Arrow IPC file or stream of `rows`, cut into record batches of `batch` rows. */
export function writeArrow(file: string, rows: Record<string, unknown>[], batch: number, as: 'stream' | 'file'): void {
  const all = tableFromJSON(rows);
  const batches: RecordBatch[] = [];
  for (let i = 0; i < rows.length; i += batch) batches.push(...all.slice(i, i + batch).batches);
  writeFileSync(file, tableToIPC(new Table(batches), as));
}
