// The distributed run's job queue in PostgreSQL. A job is one task of one explore step (a group of
// repeat_times samples). Explorers lease jobs with FOR UPDATE SKIP LOCKED (no two explorers get the
// same job, nobody waits on a lock); a lease expires unless renewed by the holder's heartbeat, and
// an expired job goes back to whoever leases next. The ack writes the job's experiences and marks
// it done in ONE transaction, guarded by the lease (owner + attempt + not expired): a holder whose
// lease expired and was taken over cannot land its experiences, so no duplicate reaches the trainer.
// Experience ids are derived from (run, job, sample), so even a repeated ack cannot add a row twice.
// Partial rollouts: a job whose group is not finished acks it as `partial` rows and, in the same
// transaction, queues one continuation job naming them; the holder of that job's lease is the only
// one who may replace them (its ack deletes and rewrites them), so a trajectory is continued by one
// explorer at a time, and a crashed explorer's continuation comes back as any lost job does.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Experience, Task } from '../../core/types.js';
import { ROW_COLUMNS, rowValues, toRow } from '../storage/codec.js';
import { parsePostgresUrl } from '../storage/postgres.js';
import { pgSafeText } from '../storage/pg-common.js';
import { inTransaction } from '../storage/pg-transaction.js';
import { pgPool } from '../storage/pg-pool.js';
import { parseExperience } from '../storage/validate.js';
import { ConflictError } from '../../core/errors.js';
import { checkLeaseEpoch } from '../storage/trainer-lease.js';
import { NOW_MS, QUEUE_DDL } from './schema.js';
import type { WorkerInfo } from '../../core/protocol.js';
import { heartbeat, runExists, workers } from './job-queue-workers.js';
import {
  partialRows,
  versionGated,
  openJobs,
  jobCount,
  counts,
  latestVersion,
  getState,
  notifyWeights,
} from './job-queue-status.js';

type Row = Record<string, unknown>;

export interface NewJob {
  id: string;
  target: number;
  requiredVersion: number;
  task: Task;
  /** Partial rollouts: the stored partial rows (ids) of the group this job continues. */
  continues?: string[];
}

export interface LeasedJob {
  id: string;
  target: number;
  requiredVersion: number;
  task: Task;
  /** The lease's attempt number: the ack must name it. */
  attempt: number;
  /** Partial rollouts: the stored partial rows (ids) of the group this job continues. */
  continues?: string[];
}

/** What an ack writes besides the job's experiences (partial rollouts). */
export interface AckExtra {
  /** Partial rows this ack writes again or releases (deleted in its transaction; each must still be partial). */
  replacing?: string[];
  /** The continuation of a group still unfinished after this job, queued in the same transaction. */
  next?: NewJob;
}

export type AckResult = { ok: true; inserted: number } | { ok: false; reason: 'lease_lost' | 'stale' };

/** A worker's row as the protocol carries it to the extension (one shape, defined in core). */
export type WorkerRow = WorkerInfo;

export interface QueueOptions {
  /** Client-side limit per query: a partitioned host's query fails instead of hanging on a dead TCP link. */
  queryTimeoutMs?: number;
  poolSize?: number;
}

/** A worker's last states: no later heartbeat of the same worker overwrites them. */

export function experienceId(runId: string, jobId: string, sample: number): string {
  return `${runId}:${jobId}:${sample}`;
}

export class JobQueue {
  readonly pool: pg.Pool;
  readonly schema: string;
  readonly connectionString: string;

  private constructor(url: string, o: QueueOptions) {
    const p = parsePostgresUrl(url);
    this.schema = p.schema;
    this.connectionString = p.connectionString;
    this.pool = pgPool({
      connectionString: p.connectionString,
      schema: p.schema,
      max: o.poolSize ?? 4,
      queryTimeoutMs: o.queryTimeoutMs,
    });
  }

  static async open(url: string, o: QueueOptions = {}): Promise<JobQueue> {
    const q = new JobQueue(url, o);
    try {
      await inTransaction(q.pool, async (c) => {
        await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`rft-queue:${q.schema}`]);
        await c.query(`CREATE SCHEMA IF NOT EXISTS ${q.schema}`);
        await c.query(QUEUE_DDL);
      });
    } catch (e) {
      await q.pool.end();
      throw e;
    }
    return q;
  }

  /** Not private: job-queue-status.ts and job-queue-workers.ts read through it. */
  async rows(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.pool.query(sql, params)).rows as Row[];
  }

  private tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }

  /**
   * From now on this queue's job inserts for RUN compare the trainer lease's EPOCH in their own
   * transaction (the trainer's queue, after it took the lease): a trainer that was taken over cannot
   * queue jobs (with its own plan, selector state or required versions) into the holder's run.
   */
  fence(runId: string, epoch: number): void {
    this.fences.set(runId, epoch);
  }

  private readonly fences = new Map<string, number>();

  /** Adds jobs that do not exist yet (idempotent: a restarted producer re-adds the same ids); fenced when this queue holds the run's lease (fence()). */
  async addJobs(runId: string, jobs: NewJob[]): Promise<number> {
    if (!jobs.length) return 0;
    const epoch = this.fences.get(runId);
    if (epoch === undefined) return this.insertJobs(this.pool, runId, jobs);
    return this.tx(async (c) => {
      await checkLeaseEpoch(c, runId, epoch, `${jobs.length} job(s) (${jobs[0]!.id}${jobs.length > 1 ? ', ...' : ''})`);
      return this.insertJobs(c, runId, jobs);
    });
  }

  private async insertJobs(q: pg.Pool | pg.PoolClient, runId: string, jobs: NewJob[]): Promise<number> {
    const r = await q.query(
      `INSERT INTO rft_jobs (run_id, id, target, required_version, task, continues)
       SELECT $1, x.id, x.target, x.rv, x.task, x.continues FROM unnest($2::text[], $3::int[], $4::int[], $5::text[], $6::text[]) AS x(id, target, rv, task, continues)
       ON CONFLICT (run_id, id) DO NOTHING`,
      [
        runId,
        jobs.map((j) => j.id),
        jobs.map((j) => j.target),
        jobs.map((j) => j.requiredVersion),
        jobs.map((j) => JSON.stringify(j.task)),
        jobs.map((j) => (j.continues ? JSON.stringify(j.continues) : null)),
      ],
    );
    return r.rowCount ?? 0;
  }

  /** Leases up to n jobs this model version may run (required_version <= version), oldest target first. */
  async lease(runId: string, owner: string, version: number, n: number, leaseMs: number): Promise<LeasedJob[]> {
    const rows = await this.rows(
      `WITH picked AS (
         SELECT id FROM rft_jobs
         WHERE run_id = $1 AND state <> 'done' AND required_version <= $2 AND (state = 'queued' OR (state = 'leased' AND lease_until < ${NOW_MS}))
         ORDER BY target, seq LIMIT $3 FOR UPDATE SKIP LOCKED)
       UPDATE rft_jobs j SET state = 'leased', lease_owner = $4, lease_until = ${NOW_MS} + $5, attempts = j.attempts + 1
       FROM picked WHERE j.run_id = $1 AND j.id = picked.id
       RETURNING j.id, j.target, j.required_version, j.task, j.attempts, j.continues`,
      [runId, version, n, owner, leaseMs],
    );
    return rows
      .map((r) => ({
        id: String(r.id),
        target: Number(r.target),
        requiredVersion: Number(r.required_version),
        task: JSON.parse(String(r.task)) as Task,
        attempt: Number(r.attempts),
        ...(r.continues === null || r.continues === undefined
          ? {}
          : { continues: JSON.parse(String(r.continues)) as string[] }),
      }))
      .sort((a, b) => a.target - b.target || a.id.localeCompare(b.id));
  }

  /**
   * Whether the holder's lease on the job is still live (its owner, its attempt, not expired) and the
   * newest published version: checked before each rollout, so a worker that was paused or cut off
   * drops a job someone else may have taken, and does not roll out with weights too old to be acked.
   */
  async leaseCheck(runId: string, job: LeasedJob, owner: string): Promise<{ live: boolean; latest: number }> {
    const r = (
      await this.rows(
        `SELECT (SELECT COALESCE(MAX(version), 0) FROM checkpoints WHERE run_id = $1) AS latest,
                EXISTS (SELECT 1 FROM rft_jobs WHERE run_id = $1 AND id = $2 AND state = 'leased' AND lease_owner = $3 AND attempts = $4 AND lease_until >= ${NOW_MS}) AS live`,
        [runId, job.id, owner, job.attempt],
      )
    )[0]!;
    return { live: Boolean(r.live), latest: Number(r.latest) };
  }

  /** Extends the holder's live leases (expired ones stay expired: someone else may have them). */
  async renew(runId: string, owner: string, leaseMs: number): Promise<number> {
    const r = await this.pool.query(
      `UPDATE rft_jobs SET lease_until = ${NOW_MS} + $3 WHERE run_id = $1 AND state = 'leased' AND lease_owner = $2 AND lease_until >= ${NOW_MS}`,
      [runId, owner, leaseMs],
    );
    return r.rowCount ?? 0;
  }

  /** Gives a leased job back at once (shutdown, rollout error); no-op if the lease is no longer ours. */
  async release(runId: string, job: LeasedJob, owner: string): Promise<void> {
    await this.pool.query(
      `UPDATE rft_jobs SET state = 'queued', lease_owner = NULL, lease_until = NULL WHERE run_id = $1 AND id = $2 AND state = 'leased' AND lease_owner = $3 AND attempts = $4`,
      [runId, job.id, owner, job.attempt],
    );
  }

  /**
   * The job's experiences and its completion in one transaction. Refused when the lease is lost
   * (expired, or taken over) or when `version` is more than maxStaleness behind the newest published
   * checkpoint (then the job goes back to the queue for a fresher explorer).
   */
  async ack(
    runId: string,
    job: LeasedJob,
    owner: string,
    version: number,
    maxStaleness: number,
    exps: Experience[],
    extra: AckExtra = {},
  ): Promise<AckResult> {
    const rows = exps.map((e, i) => pgSafeText(toRow(parseExperience(e, { field: `job ${job.id} experience[${i}]` }))));
    return this.tx(async (c) => {
      const cur = (
        await c.query(
          `SELECT state, lease_owner, attempts, acked_by, lease_until >= ${NOW_MS} AS live FROM rft_jobs WHERE run_id = $1 AND id = $2 FOR UPDATE`,
          [runId, job.id],
        )
      ).rows[0] as Row | undefined;
      if (!cur) return { ok: false, reason: 'lease_lost' } as const;
      // The same ack repeated after its commit reply was lost (connection dropped): already done by us.
      if (cur.state === 'done' && cur.acked_by === owner && Number(cur.attempts) === job.attempt)
        return { ok: true, inserted: 0 } as const;
      if (cur.state !== 'leased' || cur.lease_owner !== owner || Number(cur.attempts) !== job.attempt || !cur.live)
        return { ok: false, reason: 'lease_lost' } as const;
      const latest = Number(
        (await c.query('SELECT COALESCE(MAX(version), 0) AS v FROM checkpoints WHERE run_id = $1', [runId])).rows[0].v,
      );
      if (version < latest - maxStaleness) {
        await c.query(
          `UPDATE rft_jobs SET state = 'queued', lease_owner = NULL, lease_until = NULL WHERE run_id = $1 AND id = $2`,
          [runId, job.id],
        );
        return { ok: false, reason: 'stale' } as const;
      }
      const replacing = [...new Set(extra.replacing ?? [])];
      if (replacing.length) {
        // Only this job's lease holder replaces them (the job was queued naming them); a miss is a broken chain, never skipped.
        const n =
          (
            await c.query(`DELETE FROM experiences WHERE run_id = $1 AND status = 'partial' AND id = ANY($2::text[])`, [
              runId,
              replacing,
            ])
          ).rowCount ?? 0;
        if (n !== replacing.length)
          throw new ConflictError(
            `job ${job.id}: ${n} of ${replacing.length} partial rows it continues are still partial`,
          );
      }
      const inserted = await insertAcked(c, rows);
      await c.query(
        `UPDATE rft_jobs SET state = 'done', lease_until = NULL, acked_by = $3, acked_version = $4, acked_at = ${NOW_MS}, experiences = $5 WHERE run_id = $1 AND id = $2`,
        [runId, job.id, owner, version, inserted],
      );
      const next = extra.next;
      if (next)
        await c.query(
          `INSERT INTO rft_jobs (run_id, id, target, required_version, task, continues) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (run_id, id) DO NOTHING`,
          [
            runId,
            next.id,
            next.target,
            next.requiredVersion,
            JSON.stringify(next.task),
            next.continues ? JSON.stringify(next.continues) : null,
          ],
        );
      return { ok: true, inserted } as const;
    });
  }

  /** Partial rollouts: this run's stored partial rows of the given ids (in that order; a missing one is left out). */
  partialRows(runId: string, ids: string[]): Promise<Experience[]> {
    return partialRows(this, runId, ids);
  }

  /** Jobs not done yet that need a newer version than `version` (an explorer with it waits for weights, not for jobs). */
  versionGated(runId: string, version: number): Promise<number> {
    return versionGated(this, runId, version);
  }

  /** Jobs not done yet with target <= maxTarget (queued or leased). */
  openJobs(runId: string, maxTarget: number): Promise<number> {
    return openJobs(this, runId, maxTarget);
  }

  jobCount(runId: string, prefix: string): Promise<number> {
    return jobCount(this, runId, prefix);
  }

  counts(runId: string): Promise<Record<string, number>> {
    return counts(this, runId);
  }

  latestVersion(runId: string): Promise<{ version: number; path: string; checksum: string } | null> {
    return latestVersion(this, runId);
  }

  getState<T>(runId: string, key: string): Promise<T | null> {
    return getState<T>(this, runId, key);
  }

  notifyWeights(runId: string, version: number): Promise<void> {
    return notifyWeights(this, runId, version);
  }

  /**
   * The worker's row. A terminal state (stopped, done, fenced: its last beat) is final: a beat still in
   * flight when the worker wrote it, landing after it, changes nothing (issue 40 item 16).
   */
  heartbeat(
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
    return heartbeat(this, runId, w);
  }

  /** Any row of this run at all (jobs, workers or its stored config): tells a mistyped run id from an idle run. */
  runExists(runId: string): Promise<boolean> {
    return runExists(this, runId);
  }

  /**
   * The run's workers. Rows silent for longer than pruneAfterMs (default 10 min: a worker that was
   * killed, or stopped long ago) are deleted first, so a long run does not list dead workers forever;
   * a worker that comes back writes its row again with its next heartbeat.
   */
  workers(runId: string, o: { pruneAfterMs?: number } = {}): Promise<WorkerRow[]> {
    return workers(this, runId, o);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/**
 * A worker's id: host, pid and a random suffix drawn per call (each worker start). Host and pid alone
 * are not unique: containers with host networking all run as pid 1, and one process may run several workers.
 */
export function workerId(role: string): string {
  return `${role}@${hostname()}:${process.pid}-${randomBytes(3).toString('hex')}`;
}

/** An ack's experience rows, in the ack's transaction; ids derived from (run, job, sample) make a repeat a no-op. */
async function insertAcked(c: pg.PoolClient, rows: ReturnType<typeof toRow>[]): Promise<number> {
  if (!rows.length) return 0;
  const params: unknown[] = [];
  const tuples = rows.map((r) => {
    const vals = rowValues(r);
    const start = params.length;
    params.push(...vals);
    return '(' + vals.map((_, j) => `$${start + j + 1}`).join(', ') + ')';
  });
  const res = await c.query(
    `INSERT INTO experiences (${ROW_COLUMNS.join(', ')}) VALUES ${tuples.join(', ')} ON CONFLICT (id) DO NOTHING RETURNING id`,
    params,
  );
  return res.rowCount ?? 0;
}
