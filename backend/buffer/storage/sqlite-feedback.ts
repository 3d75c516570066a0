// The SQLite store's human-feedback mutations and log, the DPO preference pairs and the run's task
// table. Methods of SqliteStore (sqlite.ts), one concern per file.
import type { Task } from '../../core/types.js';
import { fromRow, ROW_COLUMNS, rowValues, toRow } from './codec.js';
import {
  checkDeleteGuard,
  checkPair,
  pairFromRow,
  checkUpdateGuard,
  extraWithFeedback,
  feedbackFromRow,
  feedbackOfExtra,
  taskFromRow,
  trainableOf,
} from './common.js';
import { checkN } from './sql.js';
import { parseExperience } from './validate.js';
import { ConflictError } from '../../core/errors.js';
import type { FeedbackLogEntry, FeedbackMutation, PairOrigin, PreferencePair } from './types.js';
import type { SqliteStore } from './sqlite.js';

export async function mutate(db: SqliteStore, m: FeedbackMutation): Promise<number> {
  return db.db
    .transaction((): number => {
      if (m.update) {
        const row = db.q('SELECT source, status, split, extra FROM experiences WHERE id = ?').get(m.update.id) as
          | Record<string, string>
          | undefined;
        checkUpdateGuard(m.update, row ? { source: row.source!, feedback: feedbackOfExtra(row.extra!) } : null);
        const fb = m.update.set.feedback;
        db.db
          .prepare('UPDATE experiences SET source = ?, extra = ?, rating = ?, rejected = ?, trainable = ? WHERE id = ?')
          .run(
            m.update.set.source,
            extraWithFeedback(row!.extra!, fb),
            fb?.rating ?? null,
            fb?.rejected ? 1 : 0,
            trainableOf(row!.status!, row!.split ?? null, fb),
            m.update.id,
          );
      }
      if (m.delete) {
        const r = db.q('SELECT * FROM experiences WHERE id = ?').get(m.delete.id) as
          | Record<string, unknown>
          | undefined;
        checkDeleteGuard(m.delete, r ? fromRow(r) : null);
        db.q('DELETE FROM experiences WHERE id = ?').run(m.delete.id);
      }
      if (m.insert) {
        const r = toRow(parseExperience(m.insert, { field: 'insert' }));
        db.q(
          `INSERT INTO experiences (${ROW_COLUMNS.join(', ')}) VALUES (${ROW_COLUMNS.map(() => '?').join(', ')})`,
        ).run(...rowValues(r));
      }
      const l = m.log;
      const id = Number(
        db.db
          .prepare(
            'INSERT INTO feedback_log (experience_id, who, at, action, before, after, undoes) VALUES (?, ?, ?, ?, ?, ?, ?)',
          )
          .run(
            l.experienceId,
            l.who,
            l.at,
            l.action,
            JSON.stringify(l.before ?? null),
            JSON.stringify(l.after ?? null),
            l.undoes,
          ).lastInsertRowid,
      );
      if (m.markUndone !== undefined) {
        const c = db
          .q('UPDATE feedback_log SET undone_by = ? WHERE id = ? AND undone_by IS NULL')
          .run(id, m.markUndone).changes;
        if (c === 0) throw new ConflictError(`feedback ${m.markUndone} is already undone or does not exist`);
      }
      return id;
    })
    .immediate();
}

export async function feedbackLog(
  db: SqliteStore,
  opts: { experienceId?: string; limit?: number } = {},
): Promise<FeedbackLogEntry[]> {
  const rows =
    opts.experienceId === undefined
      ? db.q('SELECT * FROM feedback_log ORDER BY id DESC LIMIT ?').all(opts.limit ?? 100)
      : db
          .q('SELECT * FROM feedback_log WHERE experience_id = ? ORDER BY id DESC LIMIT ?')
          .all(opts.experienceId, opts.limit ?? 100);
  return (rows as Record<string, unknown>[]).map(feedbackFromRow);
}

export async function feedbackEntry(db: SqliteStore, id: number): Promise<FeedbackLogEntry | null> {
  const r = db.q('SELECT * FROM feedback_log WHERE id = ?').get(id) as Record<string, unknown> | undefined;
  return r ? feedbackFromRow(r) : null;
}

export async function replacePairs(
  db: SqliteStore,
  runId: string,
  origins: readonly PairOrigin[],
  pairs: Omit<PreferencePair, 'useCount'>[],
): Promise<number> {
  pairs.forEach((p, i) => checkPair(p, `pairs[${i}]`));
  db.db
    .transaction(() => {
      db.q(
        'DELETE FROM pairs WHERE run_id = ? AND origin IN (SELECT value FROM json_each(?)) AND id NOT IN (SELECT value FROM json_each(?))',
      ).run(runId, JSON.stringify(origins), JSON.stringify(pairs.map((p) => p.id)));
      const ins = db.q(
        'INSERT OR IGNORE INTO pairs (id, run_id, task_id, chosen_id, rejected_id, origin, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      );
      for (const p of pairs) ins.run(p.id, runId, p.taskId, p.chosenId, p.rejectedId, p.origin, p.createdAt);
    })
    .immediate();
  return (
    db
      .q('SELECT COUNT(*) AS n FROM pairs WHERE run_id = ? AND origin IN (SELECT value FROM json_each(?))')
      .get(runId, JSON.stringify(origins)) as { n: number }
  ).n;
}

export async function listPairs(
  db: SqliteStore,
  opts: { runId?: string; origin?: PairOrigin; offset?: number; limit?: number } = {},
): Promise<PreferencePair[]> {
  const rows = db
    .q(
      'SELECT * FROM pairs WHERE (@run IS NULL OR run_id = @run) AND (@origin IS NULL OR origin = @origin) ORDER BY created_at, id LIMIT @limit OFFSET @offset',
    )
    .all({
      run: opts.runId ?? null,
      origin: opts.origin ?? null,
      limit: opts.limit ?? -1,
      offset: opts.offset ?? 0,
    }) as Record<string, unknown>[];
  return rows.map(pairFromRow);
}

export async function takePairs(
  db: SqliteStore,
  o: { n: number; runId?: string; maxUses?: number },
): Promise<PreferencePair[]> {
  checkN(o.n);
  return db.db
    .transaction((): PreferencePair[] => {
      const rows = db
        .q(
          'SELECT * FROM pairs WHERE (@run IS NULL OR run_id = @run) AND (@max IS NULL OR use_count < @max) ORDER BY use_count, created_at, id LIMIT @n',
        )
        .all({ run: o.runId ?? null, max: o.maxUses ?? null, n: o.n }) as Record<string, unknown>[];
      if (rows.length < o.n) return [];
      const upd = db.q('UPDATE pairs SET use_count = use_count + 1 WHERE id = ?');
      for (const r of rows) upd.run(r.id);
      return rows.map((r) => ({ ...pairFromRow(r), useCount: Number(r.use_count) + 1 }));
    })
    .immediate();
}

export async function putTasks(db: SqliteStore, runId: string, tasks: Task[]): Promise<number> {
  let added = 0;
  db.db
    .transaction(() => {
      let seq = (db.q('SELECT COALESCE(MAX(seq), -1) AS s FROM tasks WHERE run_id = ?').get(runId) as { s: number }).s;
      const ins = db.q(
        'INSERT INTO tasks (run_id, id, seq, taskset, body) VALUES (?, ?, ?, ?, ?) ON CONFLICT (run_id, id) DO UPDATE SET taskset = excluded.taskset, body = excluded.body',
      );
      for (const t of tasks) {
        const existed = db.q('SELECT 1 FROM tasks WHERE run_id = ? AND id = ?').get(runId, t.id) !== undefined;
        ins.run(runId, t.id, existed ? 0 : ++seq, t.taskset, JSON.stringify(t));
        if (!existed) added++;
      }
    })
    .immediate();
  return added;
}

export async function listTasks(
  db: SqliteStore,
  runId: string,
  opts: { offset?: number; limit?: number } = {},
): Promise<Task[]> {
  const rows = db
    .q('SELECT body FROM tasks WHERE run_id = ? ORDER BY seq LIMIT ? OFFSET ?')
    .all(runId, opts.limit ?? 1_000_000, opts.offset ?? 0) as Record<string, unknown>[];
  return rows.map(taskFromRow);
}

export async function getTask(db: SqliteStore, runId: string, id: string): Promise<Task | null> {
  const row = db.q('SELECT body FROM tasks WHERE run_id = ? AND id = ?').get(runId, id) as
    | Record<string, unknown>
    | undefined;
  return row ? taskFromRow(row) : null;
}

export async function countTasks(db: SqliteStore, runId: string): Promise<number> {
  return (db.q('SELECT COUNT(*) AS n FROM tasks WHERE run_id = ?').get(runId) as { n: number }).n;
}
