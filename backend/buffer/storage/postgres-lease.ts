// The PostgreSQL store's distributed-run parts: the trainer lease (one trainer per run, its epoch
// fencing every trainer write) and the run's metric records kept with the run. Methods of
// PostgresStore (postgres.ts), one concern per file.
import type pg from 'pg';
import type { Row } from './pg-common.js';
import {
  DEFAULT_TRAINER_LEASE_TIMEOUT_MS,
  leaseFromRow,
  TrainerFencedError,
  TrainerLeaseHeldError,
  type AcquireTrainerLease,
  type TrainerLeaseRow,
} from './trainer-lease.js';
import type { PostgresStore } from './postgres.js';

/** The database's clock in ms: lease times from every machine compare on one clock. */
const DB_NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)`;
/** The distributed run's trainer lease (trainer-lease.ts); IF NOT EXISTS: made by the first trainer. */
const LEASE_DDL = `CREATE TABLE IF NOT EXISTS rft_trainer_lease (
  run_id TEXT PRIMARY KEY,
  epoch BIGINT NOT NULL,
  holder TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  since DOUBLE PRECISION NOT NULL,
  renewed_at DOUBLE PRECISION NOT NULL,
  released INTEGER NOT NULL DEFAULT 0
)`;
/** Lease tables made before the holder's machine was recorded (issue 40 item 13) get the column. */
const LEASE_MACHINE_DDL = `ALTER TABLE rft_trainer_lease ADD COLUMN IF NOT EXISTS machine TEXT NOT NULL DEFAULT ''`;
/**
 * The distributed run's metric records (one per trained step, evaluation, stage start...), kept with
 * the run so a trainer that resumes on another machine writes the whole learning curve (issue 24
 * item 8). Written only by the lease holder (fenced); made with the lease table.
 */
const RUN_METRICS_DDL = `CREATE TABLE IF NOT EXISTS rft_run_metrics (
  run_id TEXT NOT NULL,
  seq BIGINT NOT NULL,
  kind TEXT NOT NULL,
  step INTEGER,
  record TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
)`;
/** One stored metric record: its order in the run and the record as metrics.jsonl has it. */
export interface RunMetricRow {
  seq: number;
  record: { kind: string; step?: number; [k: string]: unknown };
}

/** One write: with this store's lease epoch compared in its transaction when it holds the run's lease, else as a plain statement. */
export async function fenced<T>(
  db: PostgresStore,
  runId: string,
  what: string,
  fn: (q: pg.Pool | pg.PoolClient) => Promise<T>,
): Promise<T> {
  if (!db.fences.has(runId)) return fn(db.pool);
  return db.tx(async (c) => {
    await db.checkFence(c, runId, what);
    return fn(c);
  });
}

/**
 * Takes the run's trainer lease with a new epoch, or throws TrainerLeaseHeldError naming the holder
 * while it renews (within timeoutMs, the database's clock) and is not known to be gone, unless
 * takeOver. From then on this store's writes for the run compare the epoch in their transaction.
 */
export async function acquireTrainerLease(
  db: PostgresStore,
  runId: string,
  o: AcquireTrainerLease,
): Promise<{ lease: TrainerLeaseRow; tookFrom: TrainerLeaseRow | null }> {
  const timeoutMs = o.timeoutMs ?? DEFAULT_TRAINER_LEASE_TIMEOUT_MS;
  const row = await db.tx(async (c) => {
    // Concurrent CREATE TABLE IF NOT EXISTS can collide in the catalog: one at a time.
    await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`rft-trainer-lease:${db.schema}`]);
    await c.query(LEASE_DDL);
    await c.query(LEASE_MACHINE_DDL);
    await c.query(RUN_METRICS_DDL);
    await c.query(
      `INSERT INTO rft_trainer_lease (run_id, epoch, holder, host, pid, since, renewed_at, released) VALUES ($1, 0, '', '', 0, 0, 0, 1) ON CONFLICT DO NOTHING`,
      [runId],
    );
    const r = (
      await c.query(`SELECT *, ${DB_NOW_MS} AS now FROM rft_trainer_lease WHERE run_id = $1 FOR UPDATE`, [runId])
    ).rows[0] as Record<string, unknown>;
    const cur = leaseFromRow(r);
    const now = Number(r.now);
    const live = !cur.released && now - cur.renewedAt < timeoutMs;
    if (live && !o.takeOver && !o.holderGone?.(cur)) throw new TrainerLeaseHeldError(cur, now, timeoutMs);
    const next = await c.query(
      `UPDATE rft_trainer_lease SET epoch = epoch + 1, holder = $2, host = $3, pid = $4, machine = $5, since = ${DB_NOW_MS}, renewed_at = ${DB_NOW_MS}, released = 0 WHERE run_id = $1 RETURNING *`,
      [runId, o.holder, o.host, o.pid, o.machine ?? ''],
    );
    return { lease: leaseFromRow(next.rows[0] as Record<string, unknown>), tookFrom: live ? cur : null };
  });
  db.fences.set(runId, row.lease.epoch);
  return row;
}

/** Renews the lease this store holds; TrainerFencedError when another trainer has taken it. */
export async function renewTrainerLease(db: PostgresStore, runId: string, what = 'lease renewal'): Promise<void> {
  const epoch = db.fences.get(runId);
  if (epoch === undefined) throw new Error(`run ${runId}: db store holds no trainer lease to renew`);
  const r = await db.pool.query(
    `UPDATE rft_trainer_lease SET renewed_at = ${DB_NOW_MS} WHERE run_id = $1 AND epoch = $2 AND released = 0`,
    [runId, epoch],
  );
  if (!r.rowCount) throw new TrainerFencedError(runId, epoch, await trainerLease(db, runId), what);
}

/** Gives the lease back (a trainer that ends): the next trainer starts at once. A lease taken over stays the new holder's. */
export async function releaseTrainerLease(db: PostgresStore, runId: string): Promise<void> {
  const epoch = db.fences.get(runId);
  if (epoch === undefined) return;
  db.fences.delete(runId);
  await db.pool.query(
    `UPDATE rft_trainer_lease SET released = 1, renewed_at = ${DB_NOW_MS} WHERE run_id = $1 AND epoch = $2`,
    [runId, epoch],
  );
}

/** Appends metric records of the run (idempotent by seq: a retried insert adds nothing); fenced for the lease holder. */
export async function appendRunMetrics(db: PostgresStore, runId: string, rows: RunMetricRow[]): Promise<void> {
  if (!rows.length) return;
  const seq = rows.map((r) => r.seq);
  const kind = rows.map((r) => String(r.record.kind));
  const step = rows.map((r) =>
    typeof r.record.step === 'number' && Number.isInteger(r.record.step) ? r.record.step : null,
  );
  const rec = rows.map((r) => JSON.stringify(r.record));
  await fenced(db, runId, `${rows.length} metric record(s)`, (c) =>
    c.query(
      `INSERT INTO rft_run_metrics (run_id, seq, kind, step, record) SELECT $1, x.seq, x.kind, x.step, x.record
       FROM unnest($2::bigint[], $3::text[], $4::int[], $5::text[]) AS x(seq, kind, step, record) ON CONFLICT (run_id, seq) DO NOTHING`,
      [runId, seq, kind, step, rec],
    ),
  );
}

/**
 * The run's metric records in order, after dropping those a resume from checkpoint VERSION will
 * write again (train records of steps >= version, evaluations past it): the curve has each step once.
 */
export async function resumeRunMetrics(db: PostgresStore, runId: string, version: number): Promise<RunMetricRow[]> {
  const exists = (await db.pool.query(`SELECT to_regclass('rft_run_metrics') IS NOT NULL AS e`)).rows[0] as {
    e: boolean;
  };
  if (!exists.e) return [];
  await fenced(db, runId, 'metric records past the resumed checkpoint', (c) =>
    c.query(
      `DELETE FROM rft_run_metrics WHERE run_id = $1 AND ((kind = 'train' AND step >= $2) OR (kind = 'eval' AND step > $2))`,
      [runId, version],
    ),
  );
  const rows = (await db.pool.query('SELECT seq, record FROM rft_run_metrics WHERE run_id = $1 ORDER BY seq', [runId]))
    .rows as Row[];
  return rows.map((r) => ({ seq: Number(r.seq), record: JSON.parse(String(r.record)) as RunMetricRow['record'] }));
}

/** The run's lease as the database has it (null: no trainer ever took one). */
export async function trainerLease(db: PostgresStore, runId: string): Promise<TrainerLeaseRow | null> {
  const exists = (await db.pool.query(`SELECT to_regclass('rft_trainer_lease') IS NOT NULL AS e`)).rows[0] as {
    e: boolean;
  };
  if (!exists.e) return null;
  const r = (await db.pool.query('SELECT * FROM rft_trainer_lease WHERE run_id = $1', [runId])).rows[0] as
    | Record<string, unknown>
    | undefined;
  return r ? leaseFromRow(r) : null;
}
