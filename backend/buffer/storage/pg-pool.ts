// One way to make a PostgreSQL pool for every store that talks to the run's database. A host cut off
// from the database (a pulled cable, a partition) sees silence, not an error: without limits a query
// waits for TCP to give up (minutes) and, after the link is back, for its retransmission backoff
// (issue 40 item 14: a 30 s cut cost ~55 s and logged nothing). So each query has a client-side limit
// (it fails as a connection error and is retried on a fresh connection, which the retry logs), the
// server drops a statement its client gave up on, connecting is bounded, and idle links are probed.
import pg from 'pg';

/** A query silent for this long is taken as a cut link (default; the longest statement a run makes is well under it). */
export const DEFAULT_PG_QUERY_TIMEOUT_MS = 15_000;

export interface PgPoolOptions {
  connectionString: string;
  schema: string;
  max: number;
  queryTimeoutMs?: number;
}

export function pgPool(o: PgPoolOptions): pg.Pool {
  const q = o.queryTimeoutMs ?? DEFAULT_PG_QUERY_TIMEOUT_MS;
  const pool = new pg.Pool({
    connectionString: o.connectionString,
    max: o.max,
    // statement_timeout a little past the client's limit: the server stops what nobody waits for any more.
    options: `-c search_path=${o.schema} -c statement_timeout=${q + 5000}`,
    query_timeout: q,
    connectionTimeoutMillis: Math.min(q, 5_000),
    keepAlive: true,
    keepAliveInitialDelayMillis: 5_000,
  });
  // A dropped idle connection (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  // pg emits a dead connection's error on the client itself once the pool has let go of it (a query
  // failed by a server restart): without a listener there, that error would end the process.
  pool.on('connect', (c) => c.on('error', () => undefined));
  return pool;
}

/** Options of one query with no time limit (schema migrations over a large table). */
export function unbounded(text: string): pg.QueryConfig {
  // pg reads a falsy query_timeout as "the pool's": a day stands for none.
  return { text, query_timeout: 86_400_000 } as pg.QueryConfig;
}
