// Before the server opens a SQLite file as a buffer (which adds tables to it and writes its
// journal), it checks, read-only, that the file exists and is one of this project's buffers:
// a `schema_version` table and an `experiences` table with the buffer's columns. Any other SQLite
// file (a browser's cookie database) is refused untouched, and no new file is ever created.
import Database from 'better-sqlite3';
import { statSync } from 'node:fs';
import { ForbiddenError, NotFoundError } from './errors.js';

const REQUIRED_COLUMNS = [
  'id',
  'run_id',
  'task_id',
  'group_id',
  'source',
  'status',
  'reward',
  'prompt_text',
  'response_text',
];

export function checkBufferFile(file: string): void {
  let st;
  try {
    st = statSync(file);
  } catch {
    throw new NotFoundError(`${file}: no such buffer (the server opens existing buffers only)`);
  }
  if (!st.isFile()) throw new ForbiddenError(`${file}: not a buffer file`);
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const tables = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map(
        (r) => r.name,
      ),
    );
    if (!tables.has('schema_version') || !tables.has('experiences')) {
      throw new ForbiddenError(
        `${file}: not an RFT Studio buffer (no ${tables.has('experiences') ? 'schema_version' : 'experiences'} table); it was left untouched`,
      );
    }
    const cols = new Set((db.prepare('PRAGMA table_info(experiences)').all() as { name: string }[]).map((r) => r.name));
    const missing = REQUIRED_COLUMNS.filter((c) => !cols.has(c));
    if (missing.length)
      throw new ForbiddenError(
        `${file}: not an RFT Studio buffer (table experiences lacks ${missing.join(', ')}); it was left untouched`,
      );
  } catch (err) {
    if (err instanceof ForbiddenError) throw err;
    throw new ForbiddenError(`${file}: cannot be read as an RFT Studio buffer: ${(err as Error).message}`);
  } finally {
    db?.close();
  }
}

/**
 * A SQLite file with no tables at all (empty, or just made by `new Database`): a run that is creating
 * its buffer right now, between making the file and writing its schema. Not a foreign database.
 */
export function isFreshDatabase(file: string): boolean {
  try {
    if (statSync(file).size === 0) return true;
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      return (db.prepare('SELECT count(*) AS n FROM sqlite_master').get() as { n: number }).n === 0;
    } finally {
      db.close();
    }
  } catch {
    return false;
  }
}
