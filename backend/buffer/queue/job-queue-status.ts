// The job queue's read-side: partial rows, version gates, open and total job counts, the latest
// published weights, run state, and the weights notification. Methods of JobQueue (job-queue.ts).
import type { Experience } from '../../core/types.js';
import { fromRow } from '../storage/codec.js';
import { WEIGHTS_CHANNEL } from './schema.js';
import type { JobQueue } from './job-queue.js';

/** Partial rollouts: this run's stored partial rows of the given ids (in that order; a missing one is left out). */
export async function partialRows(db: JobQueue, runId: string, ids: string[]): Promise<Experience[]> {
  if (!ids.length) return [];
  const rows = await db.rows(
    `SELECT * FROM experiences WHERE run_id = $1 AND status = 'partial' AND id = ANY($2::text[])`,
    [runId, ids],
  );
  const byId = new Map(rows.map((r) => [String(r.id), fromRow(r)]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** Jobs not done yet that need a newer version than `version` (an explorer with it waits for weights, not for jobs). */
export async function versionGated(db: JobQueue, runId: string, version: number): Promise<number> {
  return Number(
    (
      await db.rows(
        `SELECT COUNT(*) AS n FROM rft_jobs WHERE run_id = $1 AND state <> 'done' AND required_version > $2`,
        [runId, version],
      )
    )[0]!.n,
  );
}

/** Jobs not done yet with target <= maxTarget (queued or leased). */
export async function openJobs(db: JobQueue, runId: string, maxTarget: number): Promise<number> {
  return Number(
    (
      await db.rows(`SELECT COUNT(*) AS n FROM rft_jobs WHERE run_id = $1 AND state <> 'done' AND target <= $2`, [
        runId,
        maxTarget,
      ])
    )[0]!.n,
  );
}

export async function jobCount(db: JobQueue, runId: string, prefix: string): Promise<number> {
  return Number(
    (await db.rows(`SELECT COUNT(*) AS n FROM rft_jobs WHERE run_id = $1 AND id LIKE $2`, [runId, prefix + '%']))[0]!.n,
  );
}

export async function counts(db: JobQueue, runId: string): Promise<Record<string, number>> {
  const rows = await db.rows('SELECT state, COUNT(*) AS n FROM rft_jobs WHERE run_id = $1 GROUP BY state', [runId]);
  return Object.fromEntries(rows.map((r) => [String(r.state), Number(r.n)]));
}

export async function latestVersion(
  db: JobQueue,
  runId: string,
): Promise<{ version: number; path: string; checksum: string } | null> {
  const r = (
    await db.rows('SELECT version, path, checksum FROM checkpoints WHERE run_id = $1 ORDER BY version DESC LIMIT 1', [
      runId,
    ])
  )[0];
  return r ? { version: Number(r.version), path: String(r.path), checksum: String(r.checksum) } : null;
}

export async function getState<T>(db: JobQueue, runId: string, key: string): Promise<T | null> {
  // No buffer tables yet (42P01): no run has been created in db schema.
  const r = (
    await db
      .rows('SELECT value FROM run_state WHERE run_id = $1 AND key = $2', [runId, key])
      .catch((e: { code?: string }) => {
        if (e.code === '42P01') return [];
        throw e;
      })
  )[0];
  return r ? (JSON.parse(String(r.value)) as T) : null;
}

export async function notifyWeights(db: JobQueue, runId: string, version: number): Promise<void> {
  await db.pool.query('SELECT pg_notify($1, $2)', [
    WEIGHTS_CHANNEL,
    JSON.stringify({ schema: db.schema, run: runId, version }),
  ]);
}
