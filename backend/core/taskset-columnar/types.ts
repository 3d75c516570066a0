// Shapes shared by the columnar readers (Parquet, Arrow) and the hub layout.

export interface ReadOptions {
  /** Read no further than this many rows (a preview). */
  limit?: number;
}

export interface ColumnInfo {
  /** Top-level columns and their type as the file declares it. */
  columns: { name: string; type: string }[];
  rows: number;
}
