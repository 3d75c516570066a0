// One PostgreSQL transaction on a pooled connection, for every store that talks to PostgreSQL.
import type pg from 'pg';
import { isConnectionError } from '../queue/retry.js';

/**
 * BEGIN, `fn`, COMMIT; ROLLBACK on any error. A connection whose ROLLBACK also failed (the server
 * went away mid-transaction) is destroyed, not handed back to the pool for the next caller; so is one
 * whose query failed as a connection error (a query timeout on a cut link): its ROLLBACK would only
 * wait out another timeout behind the query still pending on it.
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
    if (isConnectionError(e)) broken = true;
    else await c.query('ROLLBACK').catch(() => (broken = true));
    throw e;
  } finally {
    c.release(broken || undefined);
  }
}
