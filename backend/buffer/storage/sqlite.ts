// SQLite store (better-sqlite3): one file per run, shared by the explorer, trainer and UI processes.
// WAL lets readers run beside the one writer; writers queue on the file lock (busy timeout), and
// sampling reads take the write lock first (BEGIN IMMEDIATE) so two trainers never take the same row.
// synchronous=FULL: a commit is on disk before appendExperiences resolves, so an acknowledged batch
// survives a process kill and a power loss (NORMAL would survive only the former); `?synchronous=normal` opts out.
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Experience, Task } from '../../core/types.js';
import { fromRow, ROW_COLUMNS, rowValues, toRow } from './codec.js';
import { statsMaps } from './common.js';
import { SQLITE_MIGRATIONS } from './sqlite-schema.js';
import { checkN, filterWhere, orderLimit, priorityScoreSql, takeWhere, type Placeholder } from './sql.js';
import { parseExperience } from './validate.js';
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
import {
  mutate,
  feedbackLog,
  feedbackEntry,
  replacePairs,
  listPairs,
  takePairs,
  putTasks,
  listTasks,
  getTask,
  countTasks,
} from './sqlite-feedback.js';
import { addCheckpoint, listCheckpoints, latestCheckpoint, getState, setState } from './sqlite-run-state.js';

const ph: Placeholder = (i) => `@p${i}`;
const named = (params: unknown[]): Record<string, unknown> =>
  Object.fromEntries(params.map((v, i) => [`p${i + 1}`, v]));

export interface SqliteOptions {
  synchronous?: 'full' | 'normal';
  busyTimeoutMs?: number;
}

/**
 * Feedback, pairs and tasks (sqlite-feedback.ts) and run records (sqlite-run-state.ts) are methods in
 * files of their own; they share `db` and `q`, which are not private for that reason only.
 */
export class SqliteStore implements ExperienceStore {
  readonly kind = 'sqlite';
  readonly db: Database.Database;

  constructor(
    readonly location: string,
    opts: SqliteOptions = {},
  ) {
    if (location !== ':memory:') mkdirSync(dirname(location), { recursive: true });
    this.db = new Database(location, { timeout: opts.busyTimeoutMs ?? 15_000 });
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${opts.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
    this.migrate();
  }

  private migrate(): void {
    this.db
      .transaction(() => {
        this.db.exec(
          'CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)',
        );
        const cur =
          (this.db.prepare('SELECT MAX(version) AS v FROM schema_version').get() as { v: number | null }).v ?? 0;
        if (cur > SQLITE_MIGRATIONS.length)
          throw new InfrastructureError(
            `${this.location}: buffer schema version ${cur} is newer than this program (${SQLITE_MIGRATIONS.length})`,
          );
        for (let v = cur + 1; v <= SQLITE_MIGRATIONS.length; v++) {
          this.db.exec(SQLITE_MIGRATIONS[v - 1]!);
          this.db.prepare('INSERT INTO schema_version (version, applied_at) VALUES (?, ?)').run(v, Date.now());
        }
      })
      .immediate();
  }

  /** Prepared statements are cached: preparing costs more than running most of these queries. */
  private readonly stmts = new Map<string, Database.Statement>();
  q(sql: string): Database.Statement {
    let st = this.stmts.get(sql);
    if (!st) this.stmts.set(sql, (st = this.db.prepare(sql)));
    return st;
  }

  async schemaVersion(): Promise<number> {
    return (this.q('SELECT MAX(version) AS v FROM schema_version').get() as { v: number }).v;
  }

  private readonly insertStmt = () =>
    this.q(
      `INSERT OR IGNORE INTO experiences (${ROW_COLUMNS.join(', ')}) VALUES (${ROW_COLUMNS.map(() => '?').join(', ')})`,
    );

  async appendExperiences(batch: Experience[], opts: AppendOptions = {}): Promise<AppendResult> {
    const rows = batch.map((e, i) => toRow(parseExperience(e, { field: `batch[${i}]` })));
    const stmt = this.insertStmt();
    const duplicates: string[] = [];
    const replacing = opts.replacing ?? [];
    this.db
      .transaction(() => {
        if (replacing.length) {
          const n = this.q(
            `DELETE FROM experiences WHERE status = 'partial' AND id IN (SELECT value FROM json_each(?))`,
          ).run(JSON.stringify(replacing)).changes;
          if (n !== new Set(replacing).size)
            throw new ConflictError(
              `partial rollouts replaced: ${n} of ${new Set(replacing).size} are still partial rows (continued elsewhere?)`,
            );
        }
        for (const r of rows) if (stmt.run(...rowValues(r)).changes === 0) duplicates.push(r.id);
      })
      .immediate();
    return { inserted: rows.length - duplicates.length, duplicates };
  }

  async get(id: string): Promise<Experience | null> {
    const r = this.q('SELECT * FROM experiences WHERE id = ?').get(id) as Record<string, unknown> | undefined;
    return r ? fromRow(r) : null;
  }

  async getMany(ids: string[]): Promise<Experience[]> {
    if (ids.length === 0) return [];
    const rows = this.q(`SELECT * FROM experiences WHERE id IN (SELECT value FROM json_each(?))`).all(
      JSON.stringify(ids),
    ) as Record<string, unknown>[];
    const byId = new Map(rows.map((r) => [String(r.id), fromRow(r)]));
    return ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
  }

  async list(opts: ListOptions = {}): Promise<Experience[]> {
    const params: unknown[] = [];
    const w = filterWhere(opts, ph, params);
    const tail = orderLimit(opts, ph, params);
    return (this.q(`SELECT * FROM experiences ${w.sql} ${tail}`).all(named(params)) as Record<string, unknown>[]).map(
      fromRow,
    );
  }

  async count(filter: ExperienceFilter = {}): Promise<number> {
    const w = filterWhere(filter, ph);
    return (this.q(`SELECT COUNT(*) AS n FROM experiences ${w.sql}`).get(named(w.params)) as { n: number }).n;
  }

  async group(groupId: string): Promise<Experience[]> {
    return this.list({ groupId, limit: 10_000 });
  }

  async scan(afterSeq: number, limit: number, runId?: string): Promise<{ seq: number; experience: Experience }[]> {
    const rows = (
      runId === undefined
        ? this.q('SELECT * FROM experiences WHERE seq > ? ORDER BY seq LIMIT ?').all(afterSeq, limit)
        : this.q('SELECT * FROM experiences WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?').all(
            runId,
            afterSeq,
            limit,
          )
    ) as Record<string, unknown>[];
    return rows.map((r) => ({ seq: Number(r.seq), experience: fromRow(r) }));
  }

  async stats(runId?: string): Promise<BufferStats> {
    const w = runId === undefined ? '' : 'WHERE run_id = @r';
    const p = runId === undefined ? {} : { r: runId };
    const one = this.db
      .prepare(
        `SELECT COUNT(*) AS total, SUM(rejected) AS rejected, SUM(use_count = 0) AS unused, MIN(model_version) AS minv, MAX(model_version) AS maxv, AVG(reward) AS mean FROM experiences ${w}`,
      )
      .get(p) as Record<string, number | null>;
    const by = (col: string) =>
      statsMaps(
        this.q(`SELECT ${col} AS k, COUNT(*) AS n FROM experiences ${w} GROUP BY ${col}`).all(p) as {
          k: string;
          n: number;
        }[],
      );
    const n = (sql: string) => (this.q(sql).get(p) as { n: number }).n;
    return {
      total: one.total ?? 0,
      bySource: by('source'),
      byStatus: by('status'),
      rejected: one.rejected ?? 0,
      unused: one.unused ?? 0,
      minVersion: one.minv ?? null,
      maxVersion: one.maxv ?? null,
      meanReward: one.mean ?? null,
      tasks: n(`SELECT COUNT(*) AS n FROM tasks ${w}`),
      feedback: n(
        `SELECT COUNT(*) AS n FROM feedback_log${runId === undefined ? '' : ' WHERE experience_id IN (SELECT id FROM experiences WHERE run_id = @r)'}`,
      ),
      checkpoints: n(`SELECT COUNT(*) AS n FROM checkpoints ${w}`),
    };
  }

  async setPriority(ids: string[], priority: number): Promise<void> {
    if (!(priority > 0) || !Number.isFinite(priority))
      throw new InputError(`priority must be a positive number, got ${priority}`);
    this.q('UPDATE experiences SET priority = ? WHERE id IN (SELECT value FROM json_each(?))').run(
      priority,
      JSON.stringify(ids),
    );
  }

  /** Picks + marks + records in one BEGIN IMMEDIATE transaction (holds the write lock: no other taker interleaves). */
  private take(o: TakeOptions, pick: (params: unknown[]) => string): TakeResult {
    checkN(o.n);
    const now = o.now ?? Date.now();
    const part = o.part ?? 'main';
    const run = o.runId ?? '';
    return this.db
      .transaction((): TakeResult => {
        if (o.consumer !== undefined) {
          const ids = (
            this.q(
              'SELECT experience_id FROM consumption WHERE run_id = ? AND consumer = ? AND step = ? AND part = ? ORDER BY pos',
            ).all(run, o.consumer, o.step ?? 0, part) as { experience_id: string }[]
          ).map((r) => r.experience_id);
          if (ids.length) return { experiences: this.getManySync(ids), replayed: true };
        }
        const params: unknown[] = [];
        const sql = pick(params);
        const seqs = (this.q(sql).all(named(params)) as { seq: number }[]).map((r) => r.seq);
        if (seqs.length < o.n) return { experiences: [], replayed: false };
        const list = JSON.stringify(seqs);
        this.q(
          'UPDATE experiences SET use_count = use_count + 1, last_used_at = ? WHERE seq IN (SELECT value FROM json_each(?))',
        ).run(now, list);
        const rows = this.q('SELECT * FROM experiences WHERE seq IN (SELECT value FROM json_each(?))').all(
          list,
        ) as Record<string, unknown>[];
        const bySeq = new Map(rows.map((r) => [Number(r.seq), fromRow(r)]));
        const experiences = seqs.map((s) => bySeq.get(s)!);
        if (o.consumer !== undefined) {
          const ins = this.q(
            'INSERT INTO consumption (run_id, consumer, step, part, pos, experience_id, at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          );
          experiences.forEach((e, pos) => ins.run(run, o.consumer, o.step ?? 0, part, pos, e.id, now));
        }
        return { experiences, replayed: false };
      })
      .immediate();
  }

  private getManySync(ids: string[]): Experience[] {
    const rows = this.q(`SELECT * FROM experiences WHERE id IN (SELECT value FROM json_each(?))`).all(
      JSON.stringify(ids),
    ) as Record<string, unknown>[];
    const byId = new Map(rows.map((r) => [String(r.id), fromRow(r)]));
    return ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []));
  }

  async takeFifo(o: FifoTake): Promise<TakeResult> {
    return this.take(o, (params) => {
      const w = takeWhere('fifo', o, ph, params);
      params.push(o.n);
      return `SELECT seq FROM experiences WHERE ${w} ORDER BY seq LIMIT ${ph(params.length)}`;
    });
  }

  async takePriority(o: PriorityTake): Promise<TakeResult> {
    return this.take(o, (params) => {
      const w = takeWhere('priority', o, ph, params);
      const score = priorityScoreSql({ ...o, now: o.now ?? Date.now() }, ph, params);
      params.push(o.n);
      return `SELECT seq FROM experiences WHERE ${w} ORDER BY ${score} DESC, seq LIMIT ${ph(params.length)}`;
    });
  }

  async takeCycle(o: CycleTake): Promise<TakeResult> {
    return this.take(o, (params) => {
      const w = takeWhere('cycle', o, ph, params);
      params.push(o.n);
      return `SELECT seq FROM experiences WHERE ${w} ORDER BY use_count, seq LIMIT ${ph(params.length)}`;
    });
  }

  async availability(kind: 'fifo' | 'priority' | 'cycle', o: AvailabilityQuery): Promise<Availability> {
    const n = (stale: boolean) => {
      const params: unknown[] = [];
      const w = takeWhere(kind, o, ph, params, stale);
      return (this.q(`SELECT COUNT(*) AS n FROM experiences WHERE ${w}`).get(named(params)) as { n: number }).n;
    };
    return { ready: n(false), stale: n(true) };
  }

  async consumed(consumer: string, step: number, runId = ''): Promise<string[]> {
    return (
      this.q(
        'SELECT experience_id FROM consumption WHERE run_id = ? AND consumer = ? AND step = ? ORDER BY part, pos',
      ).all(runId, consumer, step) as { experience_id: string }[]
    ).map((r) => r.experience_id);
  }

  async lastConsumedStep(consumer: string, runId = ''): Promise<number | null> {
    return (
      this.q('SELECT MAX(step) AS s FROM consumption WHERE run_id = ? AND consumer = ?').get(runId, consumer) as {
        s: number | null;
      }
    ).s;
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

  putTasks(runId: string, tasks: Task[]): Promise<number> {
    return putTasks(this, runId, tasks);
  }

  listTasks(runId: string, opts: { offset?: number; limit?: number } = {}): Promise<Task[]> {
    return listTasks(this, runId, opts);
  }

  getTask(runId: string, id: string): Promise<Task | null> {
    return getTask(this, runId, id);
  }

  countTasks(runId: string): Promise<number> {
    return countTasks(this, runId);
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

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
