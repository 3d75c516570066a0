// PostgreSQL store (pg): the buffer for scale-out, shared by explorers on many machines and the trainer.
// Every write is one transaction committed before its promise resolves (synchronous_commit as the
// server sets it; on by default). Sampling reads pick rows with FOR UPDATE SKIP LOCKED inside
// UPDATE ... RETURNING, so concurrent trainers never take the same row and never wait on each other.
// Several runs share one database: every table carries run_id and every run-facing query filters by
// it (takes, recorded batches, tasks, checkpoints, state). `?schema=NAME` in the URL puts the tables in
// their own schema (tests; a team that wants a run's tables apart).
import type pg from 'pg';
import type { Experience, Task } from '../../core/types.js';
import { fromRow, ROW_COLUMNS, rowValues, toRow } from './codec.js';
import { pgSafeText, ph, type Row } from './pg-common.js';
import { inTransaction } from './pg-transaction.js';
import { pgPool, unbounded } from './pg-pool.js';
import type { RunMetricRow } from './postgres-lease.js';
export type { RunMetricRow };
import { POSTGRES_MIGRATIONS } from './postgres-schema.js';
import { ConflictError, InfrastructureError, InputError } from '../../core/errors.js';
import type { AppendOptions } from './types.js';
import type {
  AppendResult,
  Availability,
  AvailabilityQuery,
  BufferStats,
  CheckpointRecord,
  CycleTake,
  ExperienceFilter,
  ExperienceStore,
  FeedbackLogEntry,
  FeedbackMutation,
  FifoTake,
  ListOptions,
  PairOrigin,
  PreferencePair,
  PriorityTake,
  TakeResult,
} from './types.js';
import { parseExperience } from './validate.js';
import { checkLeaseEpoch, type AcquireTrainerLease, type TrainerLeaseRow } from './trainer-lease.js';
import { takeFifo, takePriority, takeCycle, availability, consumed, lastConsumedStep } from './postgres-take.js';
import {
  mutate,
  feedbackLog,
  feedbackEntry,
  putTasks,
  getTask,
  listTasks,
  countTasks,
  replacePairs,
  listPairs,
  takePairs,
} from './postgres-feedback.js';
import {
  fenced,
  acquireTrainerLease,
  renewTrainerLease,
  releaseTrainerLease,
  appendRunMetrics,
  resumeRunMetrics,
  trainerLease,
} from './postgres-lease.js';
import { addCheckpoint, listCheckpoints, latestCheckpoint, getState, setState } from './postgres-run-state.js';
import { list, count, group, scan, stats, setPriority } from './postgres-read.js';

/** Rows per INSERT statement (PostgreSQL allows 65535 parameters per statement). */
const INSERT_CHUNK = 1000;

export interface PostgresOptions {
  poolSize?: number;
  /** Client-side limit per query (default DEFAULT_PG_QUERY_TIMEOUT_MS): a cut link fails as a connection error. */
  queryTimeoutMs?: number;
}

export function parsePostgresUrl(url: string): { connectionString: string; schema: string; display: string } {
  const u = new URL(url);
  const schema = u.searchParams.get('schema') ?? 'public';
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema))
    throw new InputError(`postgres url: schema '${schema}' must be a plain identifier`);
  u.searchParams.delete('schema');
  const display = new URL(u.toString());
  if (display.password) display.password = '***';
  return {
    connectionString: u.toString(),
    schema,
    display: display.toString() + (schema === 'public' ? '' : `?schema=${schema}`),
  };
}

/**
 * The store's methods live by concern in postgres-take/-read/-feedback/-run-state/-lease.ts; the
 * members they share (pool, schema, fences, tx, rows, insertRows, getManyWith, checkFence, fenced)
 * are not private for that reason, and are not for other callers.
 */
export class PostgresStore implements ExperienceStore {
  readonly kind = 'postgres';
  readonly location: string;
  readonly pool: pg.Pool;
  readonly schema: string;
  /** Runs whose trainer lease this store holds, with its epoch: their writes are fenced (checkFence). */
  readonly fences = new Map<string, number>();

  private constructor(url: string, opts: PostgresOptions) {
    const p = parsePostgresUrl(url);
    this.location = p.display;
    this.schema = p.schema;
    // Query, statement and connect limits and keepalive (pg-pool.ts): a cut link fails and is retried, not waited out.
    this.pool = pgPool({
      connectionString: p.connectionString,
      schema: p.schema,
      max: opts.poolSize ?? 8,
      queryTimeoutMs: opts.queryTimeoutMs,
    });
  }

  static async open(url: string, opts: PostgresOptions = {}): Promise<PostgresStore> {
    const s = new PostgresStore(url, opts);
    try {
      await s.migrate();
    } catch (e) {
      await s.pool.end();
      throw e;
    }
    return s;
  }

  tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }

  async rows(sql: string, params: unknown[] = []): Promise<Row[]> {
    return (await this.pool.query(sql, params)).rows as Row[];
  }

  private async migrate(): Promise<void> {
    await this.tx(async (c) => {
      // A migration over a large buffer, or waiting for another opener's, may take long: no limit here.
      await c.query('SET LOCAL statement_timeout = 0');
      // Serialises concurrent first opens of the same schema (several explorers starting at once).
      await c.query({
        ...unbounded('SELECT pg_advisory_xact_lock(hashtext($1))'),
        values: [`rft-migrate:${this.schema}`],
      });
      await c.query(`CREATE SCHEMA IF NOT EXISTS ${this.schema}`);
      await c.query(
        'CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)',
      );
      const cur = Number((await c.query('SELECT COALESCE(MAX(version), 0) AS v FROM schema_version')).rows[0].v);
      if (cur > POSTGRES_MIGRATIONS.length)
        throw new InfrastructureError(
          `${this.location}: buffer schema version ${cur} is newer than this program (${POSTGRES_MIGRATIONS.length})`,
        );
      for (let v = cur + 1; v <= POSTGRES_MIGRATIONS.length; v++) {
        await c.query(unbounded(POSTGRES_MIGRATIONS[v - 1]!));
        await c.query('INSERT INTO schema_version (version, applied_at) VALUES ($1, $2)', [v, Date.now()]);
      }
    });
  }

  async schemaVersion(): Promise<number> {
    return Number((await this.rows('SELECT MAX(version) AS v FROM schema_version'))[0]!.v);
  }

  async insertRows(
    c: pg.PoolClient,
    rows: ReturnType<typeof toRow>[],
    ignoreDuplicates: boolean,
  ): Promise<Set<string>> {
    rows = rows.map(pgSafeText);
    const inserted = new Set<string>();
    for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
      const chunk = rows.slice(i, i + INSERT_CHUNK);
      const params: unknown[] = [];
      const tuples = chunk.map((r) => {
        const vals = rowValues(r);
        const start = params.length;
        params.push(...vals);
        return '(' + vals.map((_, j) => ph(start + j + 1)).join(', ') + ')';
      });
      const res = await c.query(
        `INSERT INTO experiences (${ROW_COLUMNS.join(', ')}) VALUES ${tuples.join(', ')} ${ignoreDuplicates ? 'ON CONFLICT (id) DO NOTHING' : ''} RETURNING id`,
        params,
      );
      for (const r of res.rows as Row[]) inserted.add(String(r.id));
    }
    return inserted;
  }

  async appendExperiences(batch: Experience[], opts: AppendOptions = {}): Promise<AppendResult> {
    const rows = batch.map((e, i) => toRow(parseExperience(e, { field: `batch[${i}]` })));
    const replacing = [...new Set(opts.replacing ?? [])];
    if (rows.length === 0 && !replacing.length) return { inserted: 0, duplicates: [] };
    const inserted = await this.tx(async (c) => {
      if (replacing.length) {
        const n =
          (await c.query(`DELETE FROM experiences WHERE status = 'partial' AND id = ANY($1::text[])`, [replacing]))
            .rowCount ?? 0;
        if (n !== replacing.length)
          throw new ConflictError(
            `partial rollouts replaced: ${n} of ${replacing.length} are still partial rows (continued elsewhere?)`,
          );
      }
      return this.insertRows(c, rows, true);
    });
    // A batch may repeat an id; count the first as inserted, the rest as duplicates.
    const seen = new Set<string>();
    const duplicates = rows
      .filter((r) => !inserted.has(r.id) || seen.has(r.id) || (seen.add(r.id), false))
      .map((r) => r.id);
    return { inserted: rows.length - duplicates.length, duplicates };
  }

  async get(id: string): Promise<Experience | null> {
    const r = await this.rows('SELECT * FROM experiences WHERE id = $1', [id]);
    return r[0] ? fromRow(r[0]) : null;
  }

  async getMany(ids: string[]): Promise<Experience[]> {
    if (ids.length === 0) return [];
    return this.getManyWith((sql, p) => this.rows(sql, p), ids);
  }

  async getManyWith(q: (sql: string, p: unknown[]) => Promise<Row[]>, ids: string[]): Promise<Experience[]> {
    const rows = await q('SELECT * FROM experiences WHERE id = ANY($1::text[])', [ids]);
    const byId = new Map(rows.map((r) => [String(r.id), fromRow(r)]));
    return ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
  }

  list(opts: ListOptions = {}): Promise<Experience[]> {
    return list(this, opts);
  }

  count(filter: ExperienceFilter = {}): Promise<number> {
    return count(this, filter);
  }

  group(groupId: string): Promise<Experience[]> {
    return group(this, groupId);
  }

  scan(afterSeq: number, limit: number, runId?: string): Promise<{ seq: number; experience: Experience }[]> {
    return scan(this, afterSeq, limit, runId);
  }

  stats(runId?: string): Promise<BufferStats> {
    return stats(this, runId);
  }

  setPriority(ids: string[], priority: number): Promise<void> {
    return setPriority(this, ids, priority);
  }

  takeFifo(o: FifoTake): Promise<TakeResult> {
    return takeFifo(this, o);
  }

  takePriority(o: PriorityTake): Promise<TakeResult> {
    return takePriority(this, o);
  }

  takeCycle(o: CycleTake): Promise<TakeResult> {
    return takeCycle(this, o);
  }

  availability(kind: 'fifo' | 'priority' | 'cycle', o: AvailabilityQuery): Promise<Availability> {
    return availability(this, kind, o);
  }

  consumed(consumer: string, step: number, runId = ''): Promise<string[]> {
    return consumed(this, consumer, step, runId);
  }

  lastConsumedStep(consumer: string, runId = ''): Promise<number | null> {
    return lastConsumedStep(this, consumer, runId);
  }

  mutate(m: FeedbackMutation): Promise<number> {
    return mutate(this, m);
  }

  feedbackLog(opts: { experienceId?: string; limit?: number } = {}): Promise<FeedbackLogEntry[]> {
    return feedbackLog(this, opts);
  }

  feedbackEntry(id: number): Promise<FeedbackLogEntry | null> {
    return feedbackEntry(this, id);
  }

  putTasks(runId: string, tasks: Task[]): Promise<number> {
    return putTasks(this, runId, tasks);
  }

  getTask(runId: string, id: string): Promise<Task | null> {
    return getTask(this, runId, id);
  }

  listTasks(runId: string, opts: { offset?: number; limit?: number } = {}): Promise<Task[]> {
    return listTasks(this, runId, opts);
  }

  countTasks(runId: string): Promise<number> {
    return countTasks(this, runId);
  }

  replacePairs(
    runId: string,
    origins: readonly PairOrigin[],
    pairs: Omit<PreferencePair, 'useCount'>[],
  ): Promise<number> {
    return replacePairs(this, runId, origins, pairs);
  }

  listPairs(
    opts: { runId?: string; origin?: PairOrigin; offset?: number; limit?: number } = {},
  ): Promise<PreferencePair[]> {
    return listPairs(this, opts);
  }

  takePairs(o: { n: number; runId?: string; maxUses?: number }): Promise<PreferencePair[]> {
    return takePairs(this, o);
  }

  addCheckpoint(c: CheckpointRecord): Promise<void> {
    return addCheckpoint(this, c);
  }

  listCheckpoints(runId: string): Promise<CheckpointRecord[]> {
    return listCheckpoints(this, runId);
  }

  latestCheckpoint(runId: string): Promise<CheckpointRecord | null> {
    return latestCheckpoint(this, runId);
  }

  getState<T = unknown>(runId: string, key: string): Promise<T | null> {
    return getState<T>(this, runId, key);
  }

  setState(runId: string, key: string, value: unknown): Promise<void> {
    return setState(this, runId, key, value);
  }

  /** One write: with this store's lease epoch compared in its transaction when it holds the run's lease, else as a plain statement. */
  fenced<T>(runId: string, what: string, fn: (q: pg.Pool | pg.PoolClient) => Promise<T>): Promise<T> {
    return fenced<T>(this, runId, what, fn);
  }

  /**
   * Takes the run's trainer lease with a new epoch, or throws TrainerLeaseHeldError naming the holder
   * while it renews (within timeoutMs, the database's clock) and is not known to be gone, unless
   * takeOver. From then on this store's writes for the run compare the epoch in their transaction.
   */
  acquireTrainerLease(
    runId: string,
    o: AcquireTrainerLease,
  ): Promise<{ lease: TrainerLeaseRow; tookFrom: TrainerLeaseRow | null }> {
    return acquireTrainerLease(this, runId, o);
  }

  /** Renews the lease this store holds; TrainerFencedError when another trainer has taken it. */
  renewTrainerLease(runId: string, what = 'lease renewal'): Promise<void> {
    return renewTrainerLease(this, runId, what);
  }

  /** Gives the lease back (a trainer that ends): the next trainer starts at once. A lease taken over stays the new holder's. */
  releaseTrainerLease(runId: string): Promise<void> {
    return releaseTrainerLease(this, runId);
  }

  /** Appends metric records of the run (idempotent by seq: a retried insert adds nothing); fenced for the lease holder. */
  appendRunMetrics(runId: string, rows: RunMetricRow[]): Promise<void> {
    return appendRunMetrics(this, runId, rows);
  }

  /**
   * The run's metric records in order, after dropping those a resume from checkpoint VERSION will
   * write again (train records of steps >= version, evaluations past it): the curve has each step once.
   */
  resumeRunMetrics(runId: string, version: number): Promise<RunMetricRow[]> {
    return resumeRunMetrics(this, runId, version);
  }

  /** The run's lease as the database has it (null: no trainer ever took one). */
  trainerLease(runId: string): Promise<TrainerLeaseRow | null> {
    return trainerLease(this, runId);
  }

  /**
   * In the write's transaction: the run's lease still has this store's epoch. FOR SHARE makes a
   * takeover (FOR UPDATE) wait for this write to commit, so no write lands after a takeover.
   * A store that holds no lease for the run (explorers, the coordinator, local tools) is not fenced.
   */
  async checkFence(c: pg.PoolClient, runId: string, what: string): Promise<void> {
    const mine = this.fences.get(runId);
    if (mine === undefined) return;
    await checkLeaseEpoch(c, runId, mine, what);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
