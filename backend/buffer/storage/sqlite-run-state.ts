// The SQLite store's run records: checkpoints published per run and the run's state keys (resume
// points). Methods of SqliteStore (sqlite.ts), one concern per file.
import { checkpointFromRow } from './common.js';
import type { CheckpointRecord } from './types.js';
import type { SqliteStore } from './sqlite.js';

export async function addCheckpoint(db: SqliteStore, c: CheckpointRecord): Promise<void> {
  db.db
    .prepare(
      'INSERT INTO checkpoints (run_id, version, path, checksum, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id, version) DO UPDATE SET path = excluded.path, checksum = excluded.checksum, created_at = excluded.created_at',
    )
    .run(c.runId, c.version, c.path, c.checksum, c.createdAt);
}

export async function listCheckpoints(db: SqliteStore, runId: string): Promise<CheckpointRecord[]> {
  return (
    db.q('SELECT * FROM checkpoints WHERE run_id = ? ORDER BY version').all(runId) as Record<string, unknown>[]
  ).map(checkpointFromRow);
}

export async function latestCheckpoint(db: SqliteStore, runId: string): Promise<CheckpointRecord | null> {
  const r = db.q('SELECT * FROM checkpoints WHERE run_id = ? ORDER BY version DESC LIMIT 1').get(runId) as
    | Record<string, unknown>
    | undefined;
  return r ? checkpointFromRow(r) : null;
}

export async function getState<T = unknown>(db: SqliteStore, runId: string, key: string): Promise<T | null> {
  const r = db.q('SELECT value FROM run_state WHERE run_id = ? AND key = ?').get(runId, key) as
    | { value: string }
    | undefined;
  return r ? (JSON.parse(r.value) as T) : null;
}

export async function setState(db: SqliteStore, runId: string, key: string, value: unknown): Promise<void> {
  db.db
    .prepare(
      'INSERT INTO run_state (run_id, key, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    )
    .run(runId, key, JSON.stringify(value), Date.now());
}
