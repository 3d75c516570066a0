// The PostgreSQL store's sampling reads: takes (FIFO, priority, cycle) that pick rows FOR UPDATE SKIP
// LOCKED inside UPDATE ... RETURNING, all-or-nothing and replayed per (consumer, step), and the
// counts of what a take could get. Methods of PostgresStore (postgres.ts), one concern per file.
import { fromRow } from './codec.js';
import { NotEnough, ph, type Row } from './pg-common.js';
import { checkN, priorityScoreSql, takeWhere } from './sql.js';
import type {
  Availability,
  AvailabilityQuery,
  CycleTake,
  FifoTake,
  PriorityTake,
  TakeOptions,
  TakeResult,
} from './types.js';
import type { PostgresStore } from './postgres.js';

/**
 * An empty take means fewer than n rows can be taken. One pick can come back short although enough
 * rows remain: SKIP LOCKED passes over rows other takers hold, and under READ COMMITTED a row another
 * taker has just used is dropped on re-check. So a short pick is retried while a fresh count still
 * sees n takeable rows (rows held by takers in flight count until they commit); bounded.
 */
async function take(
  db: PostgresStore,
  kind: 'fifo' | 'priority' | 'cycle',
  o: TakeOptions & AvailabilityQuery,
  pick: (params: unknown[]) => string,
  order: (a: Row, b: Row) => number,
): Promise<TakeResult> {
  for (let attempt = 1; ; attempt++) {
    const r = await takeOnce(db, o, pick, order);
    if (r.experiences.length || attempt >= 40) return r;
    const a = await availability(db, kind, {
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
async function takeOnce(
  db: PostgresStore,
  o: TakeOptions,
  pick: (params: unknown[]) => string,
  order: (a: Row, b: Row) => number,
): Promise<TakeResult> {
  checkN(o.n);
  const now = o.now ?? Date.now();
  const part = o.part ?? 'main';
  const run = o.runId ?? '';
  return db
    .tx(async (c) => {
      if (o.consumer !== undefined) {
        const prev = await c.query(
          'SELECT experience_id FROM consumption WHERE run_id = $1 AND consumer = $2 AND step = $3 AND part = $4 ORDER BY pos',
          [run, o.consumer, o.step ?? 0, part],
        );
        if (prev.rows.length) {
          const ids = (prev.rows as Row[]).map((r) => String(r.experience_id));
          return {
            experiences: await db.getManyWith(async (sql, p) => (await c.query(sql, p)).rows as Row[], ids),
            replayed: true,
          };
        }
      }
      // Marking rows trained is the trainer's write: only with the run's current lease epoch.
      if (o.consumer !== undefined) await db.checkFence(c, run, `batch of step ${o.step ?? 0}`);
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
    })
    .catch((e: unknown) => {
      if (e instanceof NotEnough) return { experiences: [], replayed: false };
      throw e;
    });
}

export async function takeFifo(db: PostgresStore, o: FifoTake): Promise<TakeResult> {
  return take(
    db,
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

export async function takePriority(db: PostgresStore, o: PriorityTake): Promise<TakeResult> {
  return take(
    db,
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

export async function takeCycle(db: PostgresStore, o: CycleTake): Promise<TakeResult> {
  return take(
    db,
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

export async function availability(
  db: PostgresStore,
  kind: 'fifo' | 'priority' | 'cycle',
  o: AvailabilityQuery,
): Promise<Availability> {
  const n = async (stale: boolean) => {
    const params: unknown[] = [];
    const w = takeWhere(kind, o, ph, params, stale);
    return Number((await db.rows(`SELECT COUNT(*) AS n FROM experiences WHERE ${w}`, params))[0]!.n);
  };
  return { ready: await n(false), stale: await n(true) };
}

export async function consumed(db: PostgresStore, consumer: string, step: number, runId = ''): Promise<string[]> {
  return (
    await db.rows(
      'SELECT experience_id FROM consumption WHERE run_id = $1 AND consumer = $2 AND step = $3 ORDER BY part, pos',
      [runId, consumer, step],
    )
  ).map((r) => String(r.experience_id));
}

export async function lastConsumedStep(db: PostgresStore, consumer: string, runId = ''): Promise<number | null> {
  const s = (
    await db.rows('SELECT MAX(step) AS s FROM consumption WHERE run_id = $1 AND consumer = $2', [runId, consumer])
  )[0]!.s;
  return s === null || s === undefined ? null : Number(s);
}
