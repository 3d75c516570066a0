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
import {
  checkDeleteGuard,
  checkPair,
  checkpointFromRow,
  checkUpdateGuard,
  pairFromRow,
  extraWithFeedback,
  feedbackFromRow,
  feedbackOfExtra,
  statsMaps,
  taskFromRow,
  trainableOf,
} from './common.js';
import { inTransaction } from './pg-transaction.js';
import { pgPool, unbounded } from './pg-pool.js';
import { POSTGRES_MIGRATIONS } from './postgres-schema.js';
import { checkN, filterWhere, orderLimit, priorityScoreSql, takeWhere, type Placeholder } from './sql.js';
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
  TakeOptions,
  TakeResult,
} from './types.js';
import { parseExperience } from './validate.js';
import {
  checkLeaseEpoch,
  DEFAULT_TRAINER_LEASE_TIMEOUT_MS,
  leaseFromRow,
  TrainerFencedError,
  TrainerLeaseHeldError,
  type AcquireTrainerLease,
  type TrainerLeaseRow,
} from './trainer-lease.js';

const ph: Placeholder = (i) => `$${i}`;
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
type Row = Record<string, unknown>;
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

export class PostgresStore implements ExperienceStore {
  readonly kind = 'postgres';
  readonly location: string;
  private readonly pool: pg.Pool;
  private readonly schema: string;
  /** Runs whose trainer lease this store holds, with its epoch: their writes are fenced (checkFence). */
  private readonly fences = new Map<string, number>();

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

  private tx<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, fn);
  }

  private async rows(sql: string, params: unknown[] = []): Promise<Row[]> {
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

  private async insertRows(
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

  private async getManyWith(q: (sql: string, p: unknown[]) => Promise<Row[]>, ids: string[]): Promise<Experience[]> {
    const rows = await q('SELECT * FROM experiences WHERE id = ANY($1::text[])', [ids]);
    const byId = new Map(rows.map((r) => [String(r.id), fromRow(r)]));
    return ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
  }

  async list(opts: ListOptions = {}): Promise<Experience[]> {
    const params: unknown[] = [];
    const w = filterWhere(opts, ph, params);
    const tail = orderLimit(opts, ph, params);
    return (await this.rows(`SELECT * FROM experiences ${w.sql} ${tail}`, params)).map(fromRow);
  }

  async count(filter: ExperienceFilter = {}): Promise<number> {
    const w = filterWhere(filter, ph);
    return Number((await this.rows(`SELECT COUNT(*) AS n FROM experiences ${w.sql}`, w.params))[0]!.n);
  }

  async group(groupId: string): Promise<Experience[]> {
    return this.list({ groupId, limit: 10_000 });
  }

  async scan(afterSeq: number, limit: number, runId?: string): Promise<{ seq: number; experience: Experience }[]> {
    const rows =
      runId === undefined
        ? await this.rows('SELECT * FROM experiences WHERE seq > $1 ORDER BY seq LIMIT $2', [afterSeq, limit])
        : await this.rows('SELECT * FROM experiences WHERE run_id = $3 AND seq > $1 ORDER BY seq LIMIT $2', [
            afterSeq,
            limit,
            runId,
          ]);
    return rows.map((r) => ({ seq: Number(r.seq), experience: fromRow(r) }));
  }

  async stats(runId?: string): Promise<BufferStats> {
    const w = runId === undefined ? '' : 'WHERE run_id = $1';
    const p = runId === undefined ? [] : [runId];
    const one = (
      await this.rows(
        `SELECT COUNT(*) AS total, SUM(rejected) AS rejected, SUM(CASE WHEN use_count = 0 THEN 1 ELSE 0 END) AS unused,
                MIN(model_version) AS minv, MAX(model_version) AS maxv, AVG(reward) AS mean FROM experiences ${w}`,
        p,
      )
    )[0]!;
    const by = async (col: string) =>
      statsMaps(
        (await this.rows(`SELECT ${col} AS k, COUNT(*) AS n FROM experiences ${w} GROUP BY ${col}`, p)) as {
          k: string;
          n: number;
        }[],
      );
    const n = async (sql: string) => Number((await this.rows(sql, p))[0]!.n);
    const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
    return {
      total: Number(one.total),
      bySource: await by('source'),
      byStatus: await by('status'),
      rejected: Number(one.rejected ?? 0),
      unused: Number(one.unused ?? 0),
      minVersion: num(one.minv),
      maxVersion: num(one.maxv),
      meanReward: num(one.mean),
      tasks: await n(`SELECT COUNT(*) AS n FROM tasks ${w}`),
      feedback: await n(
        `SELECT COUNT(*) AS n FROM feedback_log${runId === undefined ? '' : ' WHERE experience_id IN (SELECT id FROM experiences WHERE run_id = $1)'}`,
      ),
      checkpoints: await n(`SELECT COUNT(*) AS n FROM checkpoints ${w}`),
    };
  }

  async setPriority(ids: string[], priority: number): Promise<void> {
    if (!(priority > 0) || !Number.isFinite(priority))
      throw new InputError(`priority must be a positive number, got ${priority}`);
    await this.pool.query('UPDATE experiences SET priority = $1 WHERE id = ANY($2::text[])', [priority, ids]);
  }

  /**
   * An empty take means fewer than n rows can be taken. One pick can come back short although enough
   * rows remain: SKIP LOCKED passes over rows other takers hold, and under READ COMMITTED a row another
   * taker has just used is dropped on re-check. So a short pick is retried while a fresh count still
   * sees n takeable rows (rows held by takers in flight count until they commit); bounded.
   */
  private async take(
    kind: 'fifo' | 'priority' | 'cycle',
    o: TakeOptions & AvailabilityQuery,
    pick: (params: unknown[]) => string,
    order: (a: Row, b: Row) => number,
  ): Promise<TakeResult> {
    for (let attempt = 1; ; attempt++) {
      const r = await this.takeOnce(o, pick, order);
      if (r.experiences.length || attempt >= 40) return r;
      const a = await this.availability(kind, {
        source: o.source,
        minVersion: o.minVersion,
        maxUses: o.maxUses,
        runId: o.runId,
      });
      if (a.ready < o.n) return r;
      await new Promise((res) => setTimeout(res, Math.min(50, 2 * attempt)));
    }
  }

  /** `pick` selects `seq, k` (k: the ordering key) FOR UPDATE SKIP LOCKED; `order` sorts the returned rows back into pick order. */
  private async takeOnce(
    o: TakeOptions,
    pick: (params: unknown[]) => string,
    order: (a: Row, b: Row) => number,
  ): Promise<TakeResult> {
    checkN(o.n);
    const now = o.now ?? Date.now();
    const part = o.part ?? 'main';
    const run = o.runId ?? '';
    return this.tx(async (c) => {
      if (o.consumer !== undefined) {
        const prev = await c.query(
          'SELECT experience_id FROM consumption WHERE run_id = $1 AND consumer = $2 AND step = $3 AND part = $4 ORDER BY pos',
          [run, o.consumer, o.step ?? 0, part],
        );
        if (prev.rows.length) {
          const ids = (prev.rows as Row[]).map((r) => String(r.experience_id));
          return {
            experiences: await this.getManyWith(async (sql, p) => (await c.query(sql, p)).rows as Row[], ids),
            replayed: true,
          };
        }
      }
      // Marking rows trained is the trainer's write: only with the run's current lease epoch.
      if (o.consumer !== undefined) await this.checkFence(c, run, `batch of step ${o.step ?? 0}`);
      const params: unknown[] = [];
      const pickSql = pick(params);
      params.push(now);
      const res = await c.query(
        `WITH picked AS (${pickSql})
         UPDATE experiences e SET use_count = e.use_count + 1, last_used_at = ${ph(params.length)}
         FROM picked WHERE e.seq = picked.seq RETURNING e.*, picked.k AS pick_key`,
        params,
      );
      const rows = res.rows as Row[];
      if (rows.length < o.n) {
        // All-or-nothing: give the rows back (the transaction rolls back, use counts unchanged).
        throw new NotEnough();
      }
      rows.sort(order);
      const experiences = rows.map(fromRow);
      if (o.consumer !== undefined) {
        const p: unknown[] = [];
        const tuples = experiences.map((e, pos) => {
          p.push(run, o.consumer, o.step ?? 0, part, pos, e.id, now);
          const b = p.length - 7;
          return `(${[1, 2, 3, 4, 5, 6, 7].map((j) => ph(b + j)).join(', ')})`;
        });
        await c.query(
          `INSERT INTO consumption (run_id, consumer, step, part, pos, experience_id, at) VALUES ${tuples.join(', ')}`,
          p,
        );
      }
      return { experiences, replayed: false };
    }).catch((e: unknown) => {
      if (e instanceof NotEnough) return { experiences: [], replayed: false };
      throw e;
    });
  }

  async takeFifo(o: FifoTake): Promise<TakeResult> {
    return this.take(
      'fifo',
      o,
      (params) => {
        const w = takeWhere('fifo', o, ph, params);
        params.push(o.n);
        return `SELECT seq, seq AS k FROM experiences WHERE ${w} ORDER BY seq LIMIT ${ph(params.length)} FOR UPDATE SKIP LOCKED`;
      },
      (a, b) => Number(a.seq) - Number(b.seq),
    );
  }

  async takePriority(o: PriorityTake): Promise<TakeResult> {
    return this.take(
      'priority',
      o,
      (params) => {
        const w = takeWhere('priority', o, ph, params);
        const score = priorityScoreSql({ ...o, now: o.now ?? Date.now() }, ph, params);
        params.push(o.n);
        return `SELECT seq, ${score} AS k FROM experiences WHERE ${w} ORDER BY ${score} DESC, seq LIMIT ${ph(params.length)} FOR UPDATE SKIP LOCKED`;
      },
      (a, b) => Number(b.pick_key) - Number(a.pick_key) || Number(a.seq) - Number(b.seq),
    );
  }

  async takeCycle(o: CycleTake): Promise<TakeResult> {
    return this.take(
      'cycle',
      o,
      (params) => {
        const w = takeWhere('cycle', o, ph, params);
        params.push(o.n);
        return `SELECT seq, use_count AS k FROM experiences WHERE ${w} ORDER BY use_count, seq LIMIT ${ph(params.length)} FOR UPDATE SKIP LOCKED`;
      },
      (a, b) => Number(a.pick_key) - Number(b.pick_key) || Number(a.seq) - Number(b.seq),
    );
  }

  async availability(kind: 'fifo' | 'priority' | 'cycle', o: AvailabilityQuery): Promise<Availability> {
    const n = async (stale: boolean) => {
      const params: unknown[] = [];
      const w = takeWhere(kind, o, ph, params, stale);
      return Number((await this.rows(`SELECT COUNT(*) AS n FROM experiences WHERE ${w}`, params))[0]!.n);
    };
    return { ready: await n(false), stale: await n(true) };
  }

  async consumed(consumer: string, step: number, runId = ''): Promise<string[]> {
    return (
      await this.rows(
        'SELECT experience_id FROM consumption WHERE run_id = $1 AND consumer = $2 AND step = $3 ORDER BY part, pos',
        [runId, consumer, step],
      )
    ).map((r) => String(r.experience_id));
  }

  async lastConsumedStep(consumer: string, runId = ''): Promise<number | null> {
    const s = (
      await this.rows('SELECT MAX(step) AS s FROM consumption WHERE run_id = $1 AND consumer = $2', [runId, consumer])
    )[0]!.s;
    return s === null || s === undefined ? null : Number(s);
  }

  async mutate(m: FeedbackMutation): Promise<number> {
    return this.tx(async (c) => {
      if (m.update) {
        const row = (
          await c.query('SELECT source, status, split, extra FROM experiences WHERE id = $1 FOR UPDATE', [m.update.id])
        ).rows[0] as Record<string, string> | undefined;
        checkUpdateGuard(m.update, row ? { source: row.source!, feedback: feedbackOfExtra(row.extra!) } : null);
        const fb = m.update.set.feedback;
        await c.query(
          'UPDATE experiences SET source = $1, extra = $2, rating = $3, rejected = $4, trainable = $5 WHERE id = $6',
          [
            m.update.set.source,
            extraWithFeedback(row!.extra!, fb),
            fb?.rating ?? null,
            fb?.rejected ? 1 : 0,
            trainableOf(row!.status!, row!.split ?? null, fb),
            m.update.id,
          ],
        );
      }
      if (m.delete) {
        const r = (await c.query('SELECT * FROM experiences WHERE id = $1 FOR UPDATE', [m.delete.id])).rows[0] as
          | Row
          | undefined;
        checkDeleteGuard(m.delete, r ? fromRow(r) : null);
        await c.query('DELETE FROM experiences WHERE id = $1', [m.delete.id]);
      }
      if (m.insert) await this.insertRows(c, [toRow(parseExperience(m.insert, { field: 'insert' }))], false);
      const l = m.log;
      const id = Number(
        (
          await c.query(
            'INSERT INTO feedback_log (experience_id, who, at, action, before, after, undoes) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id',
            [
              l.experienceId,
              l.who,
              l.at,
              l.action,
              JSON.stringify(l.before ?? null),
              JSON.stringify(l.after ?? null),
              l.undoes,
            ],
          )
        ).rows[0].id,
      );
      if (m.markUndone !== undefined) {
        const r = await c.query('UPDATE feedback_log SET undone_by = $1 WHERE id = $2 AND undone_by IS NULL', [
          id,
          m.markUndone,
        ]);
        if (r.rowCount === 0) throw new ConflictError(`feedback ${m.markUndone} is already undone or does not exist`);
      }
      return id;
    });
  }

  async feedbackLog(opts: { experienceId?: string; limit?: number } = {}): Promise<FeedbackLogEntry[]> {
    const rows =
      opts.experienceId === undefined
        ? await this.rows('SELECT * FROM feedback_log ORDER BY id DESC LIMIT $1', [opts.limit ?? 100])
        : await this.rows('SELECT * FROM feedback_log WHERE experience_id = $1 ORDER BY id DESC LIMIT $2', [
            opts.experienceId,
            opts.limit ?? 100,
          ]);
    return rows.map(feedbackFromRow);
  }

  async feedbackEntry(id: number): Promise<FeedbackLogEntry | null> {
    const r = await this.rows('SELECT * FROM feedback_log WHERE id = $1', [id]);
    return r[0] ? feedbackFromRow(r[0]) : null;
  }

  async putTasks(runId: string, tasks: Task[]): Promise<number> {
    return this.tx(async (c) => {
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`rft-tasks:${runId}`]);
      let seq = Number(
        (await c.query('SELECT COALESCE(MAX(seq), -1) AS s FROM tasks WHERE run_id = $1', [runId])).rows[0].s,
      );
      let added = 0;
      for (const t of tasks) {
        const r = await c.query(
          `INSERT INTO tasks (run_id, id, seq, taskset, body) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (run_id, id) DO UPDATE SET taskset = excluded.taskset, body = excluded.body RETURNING (xmax = 0) AS inserted`,
          [runId, t.id, seq + 1, t.taskset, JSON.stringify(t)],
        );
        if ((r.rows[0] as Row).inserted) {
          seq++;
          added++;
        }
      }
      return added;
    });
  }

  async getTask(runId: string, id: string): Promise<Task | null> {
    const [row] = await this.rows('SELECT body FROM tasks WHERE run_id = $1 AND id = $2', [runId, id]);
    return row ? taskFromRow(row) : null;
  }

  async listTasks(runId: string, opts: { offset?: number; limit?: number } = {}): Promise<Task[]> {
    return (
      await this.rows('SELECT body FROM tasks WHERE run_id = $1 ORDER BY seq LIMIT $2 OFFSET $3', [
        runId,
        opts.limit ?? 1_000_000,
        opts.offset ?? 0,
      ])
    ).map(taskFromRow);
  }

  async countTasks(runId: string): Promise<number> {
    return Number((await this.rows('SELECT COUNT(*) AS n FROM tasks WHERE run_id = $1', [runId]))[0]!.n);
  }

  async replacePairs(
    runId: string,
    origins: readonly PairOrigin[],
    pairs: Omit<PreferencePair, 'useCount'>[],
  ): Promise<number> {
    pairs.forEach((p, i) => checkPair(p, `pairs[${i}]`));
    return this.tx(async (c) => {
      await c.query('DELETE FROM pairs WHERE run_id = $1 AND origin = ANY($2::text[]) AND NOT (id = ANY($3::text[]))', [
        runId,
        origins,
        pairs.map((p) => p.id),
      ]);
      for (const p of pairs) {
        await c.query(
          'INSERT INTO pairs (id, run_id, task_id, chosen_id, rejected_id, origin, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING',
          [p.id, runId, p.taskId, p.chosenId, p.rejectedId, p.origin, p.createdAt],
        );
      }
      return Number(
        (
          await c.query('SELECT COUNT(*) AS n FROM pairs WHERE run_id = $1 AND origin = ANY($2::text[])', [
            runId,
            origins,
          ])
        ).rows[0].n,
      );
    });
  }

  async listPairs(
    opts: { runId?: string; origin?: PairOrigin; offset?: number; limit?: number } = {},
  ): Promise<PreferencePair[]> {
    return (
      await this.rows(
        'SELECT * FROM pairs WHERE ($1::text IS NULL OR run_id = $1) AND ($2::text IS NULL OR origin = $2) ORDER BY created_at, id LIMIT $3 OFFSET $4',
        [opts.runId ?? null, opts.origin ?? null, opts.limit ?? null, opts.offset ?? 0],
      )
    ).map(pairFromRow);
  }

  async takePairs(o: { n: number; runId?: string; maxUses?: number }): Promise<PreferencePair[]> {
    checkN(o.n);
    return this.tx(async (c) => {
      if (o.runId !== undefined) await this.checkFence(c, o.runId, 'pair uses');
      const rows = (
        await c.query(
          'SELECT * FROM pairs WHERE ($1::text IS NULL OR run_id = $1) AND ($2::int IS NULL OR use_count < $2) ORDER BY use_count, created_at, id LIMIT $3 FOR UPDATE',
          [o.runId ?? null, o.maxUses ?? null, o.n],
        )
      ).rows as Row[];
      if (rows.length < o.n) return [];
      await c.query('UPDATE pairs SET use_count = use_count + 1 WHERE id = ANY($1::text[])', [
        rows.map((r) => String(r.id)),
      ]);
      return rows.map((r) => ({ ...pairFromRow(r), useCount: Number(r.use_count) + 1 }));
    });
  }

  async addCheckpoint(c: CheckpointRecord): Promise<void> {
    // The record is an upsert: a trainer that lost its lease would overwrite the holder's version.
    await this.fenced(c.runId, `checkpoint record v${c.version}`, (t) =>
      t.query(
        `INSERT INTO checkpoints (run_id, version, path, checksum, created_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (run_id, version) DO UPDATE SET path = excluded.path, checksum = excluded.checksum, created_at = excluded.created_at`,
        [c.runId, c.version, c.path, c.checksum, c.createdAt],
      ),
    );
  }

  async listCheckpoints(runId: string): Promise<CheckpointRecord[]> {
    return (await this.rows('SELECT * FROM checkpoints WHERE run_id = $1 ORDER BY version', [runId])).map(
      checkpointFromRow,
    );
  }

  async latestCheckpoint(runId: string): Promise<CheckpointRecord | null> {
    const r = await this.rows('SELECT * FROM checkpoints WHERE run_id = $1 ORDER BY version DESC LIMIT 1', [runId]);
    return r[0] ? checkpointFromRow(r[0]) : null;
  }

  async getState<T = unknown>(runId: string, key: string): Promise<T | null> {
    const r = await this.rows('SELECT value FROM run_state WHERE run_id = $1 AND key = $2', [runId, key]);
    return r[0] ? (JSON.parse(String(r[0].value)) as T) : null;
  }

  async setState(runId: string, key: string, value: unknown): Promise<void> {
    // The trainer's state (weights address, dist:done, selector, evaluations) is fenced like its checkpoints.
    await this.fenced(runId, `run state '${key}'`, (c) =>
      c.query(
        `INSERT INTO run_state (run_id, key, value, updated_at) VALUES ($1, $2, $3, $4)
         ON CONFLICT (run_id, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
        [runId, key, JSON.stringify(value), Date.now()],
      ),
    );
  }

  /** One write: with this store's lease epoch compared in its transaction when it holds the run's lease, else as a plain statement. */
  private async fenced<T>(runId: string, what: string, fn: (q: pg.Pool | pg.PoolClient) => Promise<T>): Promise<T> {
    if (!this.fences.has(runId)) return fn(this.pool);
    return this.tx(async (c) => {
      await this.checkFence(c, runId, what);
      return fn(c);
    });
  }

  /**
   * Takes the run's trainer lease with a new epoch, or throws TrainerLeaseHeldError naming the holder
   * while it renews (within timeoutMs, the database's clock) and is not known to be gone, unless
   * takeOver. From then on this store's writes for the run compare the epoch in their transaction.
   */
  async acquireTrainerLease(
    runId: string,
    o: AcquireTrainerLease,
  ): Promise<{ lease: TrainerLeaseRow; tookFrom: TrainerLeaseRow | null }> {
    const timeoutMs = o.timeoutMs ?? DEFAULT_TRAINER_LEASE_TIMEOUT_MS;
    const row = await this.tx(async (c) => {
      // Concurrent CREATE TABLE IF NOT EXISTS can collide in the catalog: one at a time.
      await c.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`rft-trainer-lease:${this.schema}`]);
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
    this.fences.set(runId, row.lease.epoch);
    return row;
  }

  /** Renews the lease this store holds; TrainerFencedError when another trainer has taken it. */
  async renewTrainerLease(runId: string, what = 'lease renewal'): Promise<void> {
    const epoch = this.fences.get(runId);
    if (epoch === undefined) throw new Error(`run ${runId}: this store holds no trainer lease to renew`);
    const r = await this.pool.query(
      `UPDATE rft_trainer_lease SET renewed_at = ${DB_NOW_MS} WHERE run_id = $1 AND epoch = $2 AND released = 0`,
      [runId, epoch],
    );
    if (!r.rowCount) throw new TrainerFencedError(runId, epoch, await this.trainerLease(runId), what);
  }

  /** Gives the lease back (a trainer that ends): the next trainer starts at once. A lease taken over stays the new holder's. */
  async releaseTrainerLease(runId: string): Promise<void> {
    const epoch = this.fences.get(runId);
    if (epoch === undefined) return;
    this.fences.delete(runId);
    await this.pool.query(
      `UPDATE rft_trainer_lease SET released = 1, renewed_at = ${DB_NOW_MS} WHERE run_id = $1 AND epoch = $2`,
      [runId, epoch],
    );
  }

  /** Appends metric records of the run (idempotent by seq: a retried insert adds nothing); fenced for the lease holder. */
  async appendRunMetrics(runId: string, rows: RunMetricRow[]): Promise<void> {
    if (!rows.length) return;
    const seq = rows.map((r) => r.seq);
    const kind = rows.map((r) => String(r.record.kind));
    const step = rows.map((r) =>
      typeof r.record.step === 'number' && Number.isInteger(r.record.step) ? r.record.step : null,
    );
    const rec = rows.map((r) => JSON.stringify(r.record));
    await this.fenced(runId, `${rows.length} metric record(s)`, (c) =>
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
  async resumeRunMetrics(runId: string, version: number): Promise<RunMetricRow[]> {
    const exists = (await this.pool.query(`SELECT to_regclass('rft_run_metrics') IS NOT NULL AS e`)).rows[0] as {
      e: boolean;
    };
    if (!exists.e) return [];
    await this.fenced(runId, 'metric records past the resumed checkpoint', (c) =>
      c.query(
        `DELETE FROM rft_run_metrics WHERE run_id = $1 AND ((kind = 'train' AND step >= $2) OR (kind = 'eval' AND step > $2))`,
        [runId, version],
      ),
    );
    const rows = (
      await this.pool.query('SELECT seq, record FROM rft_run_metrics WHERE run_id = $1 ORDER BY seq', [runId])
    ).rows as Row[];
    return rows.map((r) => ({ seq: Number(r.seq), record: JSON.parse(String(r.record)) as RunMetricRow['record'] }));
  }

  /** The run's lease as the database has it (null: no trainer ever took one). */
  async trainerLease(runId: string): Promise<TrainerLeaseRow | null> {
    const exists = (await this.pool.query(`SELECT to_regclass('rft_trainer_lease') IS NOT NULL AS e`)).rows[0] as {
      e: boolean;
    };
    if (!exists.e) return null;
    const r = (await this.pool.query('SELECT * FROM rft_trainer_lease WHERE run_id = $1', [runId])).rows[0] as
      | Record<string, unknown>
      | undefined;
    return r ? leaseFromRow(r) : null;
  }

  /**
   * In the write's transaction: the run's lease still has this store's epoch. FOR SHARE makes a
   * takeover (FOR UPDATE) wait for this write to commit, so no write lands after a takeover.
   * A store that holds no lease for the run (explorers, the coordinator, local tools) is not fenced.
   */
  private async checkFence(c: pg.PoolClient, runId: string, what: string): Promise<void> {
    const mine = this.fences.get(runId);
    if (mine === undefined) return;
    await checkLeaseEpoch(c, runId, mine, what);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

class NotEnough extends Error {}

/**
 * PostgreSQL text cannot hold U+0000, which a small model does sample: text columns get U+FFFD in
 * its place (the tokens, stored exactly in the binary column, keep the truth; SQLite keeps it as is).
 */
function pgSafeText<R extends object>(r: R): R {
  const out = { ...r } as Record<string, unknown>;
  for (const [k, v] of Object.entries(out))
    if (typeof v === 'string' && v.includes('\u0000')) out[k] = v.replace(/\u0000/g, '\uFFFD');
  return out as unknown as R;
}
