// The PostgreSQL store's human-feedback mutations and log, the run's task table and the DPO
// preference pairs. Methods of PostgresStore (postgres.ts), one concern per file.
import type { Task } from '../../core/types.js';
import { fromRow, toRow } from './codec.js';
import {
  checkDeleteGuard,
  checkPair,
  checkUpdateGuard,
  pairFromRow,
  extraWithFeedback,
  feedbackFromRow,
  feedbackOfExtra,
  taskFromRow,
  trainableOf,
} from './common.js';
import type { Row } from './pg-common.js';
import { checkN } from './sql.js';
import { ConflictError } from '../../core/errors.js';
import type { FeedbackLogEntry, FeedbackMutation, PairOrigin, PreferencePair } from './types.js';
import { parseExperience } from './validate.js';
import type { PostgresStore } from './postgres.js';

export async function mutate(db: PostgresStore, m: FeedbackMutation): Promise<number> {
  return db.tx(async (c) => {
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
    if (m.insert) await db.insertRows(c, [toRow(parseExperience(m.insert, { field: 'insert' }))], false);
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

export async function feedbackLog(
  db: PostgresStore,
  opts: { experienceId?: string; limit?: number } = {},
): Promise<FeedbackLogEntry[]> {
  const rows =
    opts.experienceId === undefined
      ? await db.rows('SELECT * FROM feedback_log ORDER BY id DESC LIMIT $1', [opts.limit ?? 100])
      : await db.rows('SELECT * FROM feedback_log WHERE experience_id = $1 ORDER BY id DESC LIMIT $2', [
          opts.experienceId,
          opts.limit ?? 100,
        ]);
  return rows.map(feedbackFromRow);
}

export async function feedbackEntry(db: PostgresStore, id: number): Promise<FeedbackLogEntry | null> {
  const r = await db.rows('SELECT * FROM feedback_log WHERE id = $1', [id]);
  return r[0] ? feedbackFromRow(r[0]) : null;
}

export async function putTasks(db: PostgresStore, runId: string, tasks: Task[]): Promise<number> {
  return db.tx(async (c) => {
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

export async function getTask(db: PostgresStore, runId: string, id: string): Promise<Task | null> {
  const [row] = await db.rows('SELECT body FROM tasks WHERE run_id = $1 AND id = $2', [runId, id]);
  return row ? taskFromRow(row) : null;
}

export async function listTasks(
  db: PostgresStore,
  runId: string,
  opts: { offset?: number; limit?: number } = {},
): Promise<Task[]> {
  return (
    await db.rows('SELECT body FROM tasks WHERE run_id = $1 ORDER BY seq LIMIT $2 OFFSET $3', [
      runId,
      opts.limit ?? 1_000_000,
      opts.offset ?? 0,
    ])
  ).map(taskFromRow);
}

export async function countTasks(db: PostgresStore, runId: string): Promise<number> {
  return Number((await db.rows('SELECT COUNT(*) AS n FROM tasks WHERE run_id = $1', [runId]))[0]!.n);
}

export async function replacePairs(
  db: PostgresStore,
  runId: string,
  origins: readonly PairOrigin[],
  pairs: Omit<PreferencePair, 'useCount'>[],
): Promise<number> {
  pairs.forEach((p, i) => checkPair(p, `pairs[${i}]`));
  return db.tx(async (c) => {
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

export async function listPairs(
  db: PostgresStore,
  opts: { runId?: string; origin?: PairOrigin; offset?: number; limit?: number } = {},
): Promise<PreferencePair[]> {
  return (
    await db.rows(
      'SELECT * FROM pairs WHERE ($1::text IS NULL OR run_id = $1) AND ($2::text IS NULL OR origin = $2) ORDER BY created_at, id LIMIT $3 OFFSET $4',
      [opts.runId ?? null, opts.origin ?? null, opts.limit ?? null, opts.offset ?? 0],
    )
  ).map(pairFromRow);
}

export async function takePairs(
  db: PostgresStore,
  o: { n: number; runId?: string; maxUses?: number },
): Promise<PreferencePair[]> {
  checkN(o.n);
  return db.tx(async (c) => {
    if (o.runId !== undefined) await db.checkFence(c, o.runId, 'pair uses');
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
