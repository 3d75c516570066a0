// An exclusive lock across processes (and within one) around a read-modify-write of a small file
// such as `.rft/runs.json`. The lock is SQLite's own EXCLUSIVE lock on a lock file (an OS file
// lock), so a holder killed with -9 releases it at once: no stale lock files, no pid guessing.
// Waiting never blocks the event loop: a busy lock is retried on a timer.
import { ConflictError, InfrastructureError } from '../core/errors.js';
import Database from 'better-sqlite3';

/** In-process queue per lock file: a second connection of this process must not spin against the first. */
const local = new Map<string, Promise<unknown>>();

export interface LockOptions {
  /** Give up after this long (default 30 s) with an error naming the lock file. */
  timeoutMs?: number;
}

export function withFileLock<T>(lockFile: string, fn: () => Promise<T> | T, o: LockOptions = {}): Promise<T> {
  const prev = local.get(lockFile) ?? Promise.resolve();
  const run = prev.then(() => holdOsLock(lockFile, fn, o.timeoutMs ?? 30_000));
  const tail = run.catch(() => undefined);
  local.set(lockFile, tail);
  void tail.then(() => {
    if (local.get(lockFile) === tail) local.delete(lockFile);
  });
  return run;
}

async function holdOsLock<T>(lockFile: string, fn: () => Promise<T> | T, timeoutMs: number): Promise<T> {
  // timeout 0: SQLITE_BUSY at once instead of sleeping inside the native call.
  const db = new Database(lockFile, { timeout: 0 });
  try {
    const end = Date.now() + timeoutMs;
    for (let wait = 2; ; wait = Math.min(50, wait * 2)) {
      try {
        db.exec('BEGIN EXCLUSIVE');
        break;
      } catch (e) {
        if ((e as { code?: string }).code !== 'SQLITE_BUSY')
          throw new InfrastructureError(`${lockFile}: cannot take the lock: ${(e as Error).message}`);
        if (Date.now() > end)
          throw new ConflictError(`${lockFile}: still locked by another process after ${timeoutMs / 1000} s`);
        await new Promise((r) => setTimeout(r, wait + Math.random() * wait));
      }
    }
    try {
      return await fn();
    } finally {
      db.exec('ROLLBACK');
    }
  } finally {
    db.close();
  }
}
