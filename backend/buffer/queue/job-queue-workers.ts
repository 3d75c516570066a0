// The distributed run's process table (rft_workers): heartbeats of explorers and trainers, whether a
// run exists, and the rows `rft workers` and the Workers view show. Methods of JobQueue (job-queue.ts).
import { hostname } from 'node:os';
import { NOW_MS } from './schema.js';
import type { JobQueue, WorkerRow } from './job-queue.js';

const TERMINAL_STATES = ['stopped', 'done', 'fenced'];
const TERMINAL_SQL = TERMINAL_STATES.map((s) => `'${s}'`).join(', ');

/**
 * The worker's row. A terminal state (stopped, done, fenced: its last beat) is final: a beat still in
 * flight when the worker wrote it, landing after it, changes nothing (issue 40 item 16).
 */
export async function heartbeat(
  db: JobQueue,
  runId: string,
  w: {
    id: string;
    role: string;
    state: string;
    detail?: string | null;
    modelVersion?: number | null;
    done: number;
    throughput: number;
    startedAt: number;
  },
): Promise<void> {
  await db.pool.query(
    `INSERT INTO rft_workers (run_id, id, host, pid, role, state, detail, model_version, done, throughput, started_at, last_heartbeat)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, ${NOW_MS})
     ON CONFLICT (run_id, id) DO UPDATE SET state = excluded.state, detail = excluded.detail, model_version = excluded.model_version,
       done = excluded.done, throughput = excluded.throughput, last_heartbeat = excluded.last_heartbeat
     WHERE rft_workers.state NOT IN (${TERMINAL_SQL})`,
    [
      runId,
      w.id,
      hostname(),
      process.pid,
      w.role,
      w.state,
      w.detail ?? null,
      w.modelVersion ?? null,
      w.done,
      w.throughput,
      w.startedAt,
    ],
  );
}

/** Any row of this run at all (jobs, workers or its stored config): tells a mistyped run id from an idle run. */
export async function runExists(db: JobQueue, runId: string): Promise<boolean> {
  const r = await db.rows(
    `SELECT EXISTS (SELECT 1 FROM rft_jobs WHERE run_id = $1) OR EXISTS (SELECT 1 FROM rft_workers WHERE run_id = $1) AS x`,
    [runId],
  );
  if (r[0]!.x) return true;
  return (await db.getState(runId, 'dist:config')) !== null;
}

/**
 * The run's workers. Rows silent for longer than pruneAfterMs (default 10 min: a worker that was
 * killed, or stopped long ago) are deleted first, so a long run does not list dead workers forever;
 * a worker that comes back writes its row again with its next heartbeat.
 */
export async function workers(db: JobQueue, runId: string, o: { pruneAfterMs?: number } = {}): Promise<WorkerRow[]> {
  await db.pool.query(`DELETE FROM rft_workers WHERE run_id = $1 AND last_heartbeat < ${NOW_MS} - $2`, [
    runId,
    o.pruneAfterMs ?? 600_000,
  ]);
  const rows = await db.rows(
    `SELECT *, (${NOW_MS} - last_heartbeat) / 1000 AS age_s FROM rft_workers WHERE run_id = $1 ORDER BY role DESC, id`,
    [runId],
  );
  return rows.map((r) => ({
    id: String(r.id),
    host: String(r.host),
    pid: Number(r.pid),
    role: String(r.role),
    state: String(r.state),
    detail: r.detail === null ? null : String(r.detail),
    modelVersion: r.model_version === null ? null : Number(r.model_version),
    done: Number(r.done),
    throughput: Number(r.throughput),
    startedAt: Number(r.started_at),
    lastHeartbeat: Number(r.last_heartbeat),
    ageS: Number(r.age_s),
  }));
}
