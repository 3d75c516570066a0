// The PostgreSQL store's run records: checkpoints published per run and the run's state keys (resume
// points), both fenced by the trainer lease. Methods of PostgresStore (postgres.ts), one concern per file.
import { checkpointFromRow } from './common.js';
import type { CheckpointRecord } from './types.js';
import type { PostgresStore } from './postgres.js';

export async function addCheckpoint(db: PostgresStore, c: CheckpointRecord): Promise<void> {
  // The record is an upsert: a trainer that lost its lease would overwrite the holder's version.
  await db.fenced(c.runId, `checkpoint record v${c.version}`, (t) =>
    t.query(
      `INSERT INTO checkpoints (run_id, version, path, checksum, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (run_id, version) DO UPDATE SET path = excluded.path, checksum = excluded.checksum, created_at = excluded.created_at`,
      [c.runId, c.version, c.path, c.checksum, c.createdAt],
    ),
  );
}

export async function listCheckpoints(db: PostgresStore, runId: string): Promise<CheckpointRecord[]> {
  return (await db.rows('SELECT * FROM checkpoints WHERE run_id = $1 ORDER BY version', [runId])).map(
    checkpointFromRow,
  );
}

export async function latestCheckpoint(db: PostgresStore, runId: string): Promise<CheckpointRecord | null> {
  const r = await db.rows('SELECT * FROM checkpoints WHERE run_id = $1 ORDER BY version DESC LIMIT 1', [runId]);
  return r[0] ? checkpointFromRow(r[0]) : null;
}

export async function getState<T = unknown>(db: PostgresStore, runId: string, key: string): Promise<T | null> {
  const r = await db.rows('SELECT value FROM run_state WHERE run_id = $1 AND key = $2', [runId, key]);
  return r[0] ? (JSON.parse(String(r[0].value)) as T) : null;
}

export async function setState(db: PostgresStore, runId: string, key: string, value: unknown): Promise<void> {
  // The trainer's state (weights address, dist:done, selector, evaluations) is fenced like its checkpoints.
  await db.fenced(runId, `run state '${key}'`, (c) =>
    c.query(
      `INSERT INTO run_state (run_id, key, value, updated_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      [runId, key, JSON.stringify(value), Date.now()],
    ),
  );
}
