// One PostgreSQL transaction on a pooled connection, for every store that talks to PostgreSQL.
import type pg from 'pg';

/**
 * BEGIN, `fn`, COMMIT; ROLLBACK on any error. A connection whose ROLLBACK also failed (the server
 * went away mid-transaction) is destroyed, not handed back to the pool for the next caller.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
  const c = await pool.connect();
  let broken = false;
  try {
    await c.query('BEGIN');
    const r = await fn(c);
    await c.query('COMMIT');
    return r;
  } catch (e) {
    await c.query('ROLLBACK').catch(() => (broken = true));
    throw e;
  } finally {
    c.release(broken || undefined);
  }
}
