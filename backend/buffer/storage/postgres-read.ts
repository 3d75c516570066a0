// The PostgreSQL store's browsing reads: list with filters, count, a group, a scan by sequence number,
// the buffer's stats, and priorities. Methods of PostgresStore (postgres.ts), one concern per file.
import type { Experience } from '../../core/types.js';
import { fromRow } from './codec.js';
import { statsMaps } from './common.js';
import { ph } from './pg-common.js';
import { filterWhere, orderLimit } from './sql.js';
import { InputError } from '../../core/errors.js';
import type { BufferStats, ExperienceFilter, ListOptions } from './types.js';
import type { PostgresStore } from './postgres.js';

export async function list(db: PostgresStore, opts: ListOptions = {}): Promise<Experience[]> {
  const params: unknown[] = [];
  const w = filterWhere(opts, ph, params);
  const tail = orderLimit(opts, ph, params);
  return (await db.rows(`SELECT * FROM experiences ${w.sql} ${tail}`, params)).map(fromRow);
}

export async function count(db: PostgresStore, filter: ExperienceFilter = {}): Promise<number> {
  const w = filterWhere(filter, ph);
  return Number((await db.rows(`SELECT COUNT(*) AS n FROM experiences ${w.sql}`, w.params))[0]!.n);
}

export async function group(db: PostgresStore, groupId: string): Promise<Experience[]> {
  return list(db, { groupId, limit: 10_000 });
}

export async function scan(
  db: PostgresStore,
  afterSeq: number,
  limit: number,
  runId?: string,
): Promise<{ seq: number; experience: Experience }[]> {
  const rows =
    runId === undefined
      ? await db.rows('SELECT * FROM experiences WHERE seq > $1 ORDER BY seq LIMIT $2', [afterSeq, limit])
      : await db.rows('SELECT * FROM experiences WHERE run_id = $3 AND seq > $1 ORDER BY seq LIMIT $2', [
          afterSeq,
          limit,
          runId,
        ]);
  return rows.map((r) => ({ seq: Number(r.seq), experience: fromRow(r) }));
}

export async function stats(db: PostgresStore, runId?: string): Promise<BufferStats> {
  const w = runId === undefined ? '' : 'WHERE run_id = $1';
  const p = runId === undefined ? [] : [runId];
  const one = (
    await db.rows(
      `SELECT COUNT(*) AS total, SUM(rejected) AS rejected, SUM(CASE WHEN use_count = 0 THEN 1 ELSE 0 END) AS unused,
              MIN(model_version) AS minv, MAX(model_version) AS maxv, AVG(reward) AS mean FROM experiences ${w}`,
      p,
    )
  )[0]!;
  const by = async (col: string) =>
    statsMaps(
      (await db.rows(`SELECT ${col} AS k, COUNT(*) AS n FROM experiences ${w} GROUP BY ${col}`, p)) as {
        k: string;
        n: number;
      }[],
    );
  const n = async (sql: string) => Number((await db.rows(sql, p))[0]!.n);
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

export async function setPriority(db: PostgresStore, ids: string[], priority: number): Promise<void> {
  if (!(priority > 0) || !Number.isFinite(priority))
    throw new InputError(`priority must be a positive number, got ${priority}`);
  await db.pool.query('UPDATE experiences SET priority = $1 WHERE id = ANY($2::text[])', [priority, ids]);
}
