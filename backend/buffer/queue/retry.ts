// Connection faults of PostgreSQL (server restarted, network cut) are waited out, not fatal: the
// operation is retried with backoff. Only errors that mean "the connection is gone" are retried;
// a constraint violation or bad SQL still throws at once.
import type { ExperienceStore } from '../storage/types.js';

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTCONN',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08006',
  '53300',
]);

export function isConnectionError(e: unknown): boolean {
  const err = e as { code?: string; message?: string } | null;
  if (!err) return false;
  if (err.code && CONNECTION_CODES.has(err.code)) return true;
  const m = String(err.message ?? '');
  return /Connection terminated|connection timeout|Query read timeout|timeout exceeded when trying to connect|Client has encountered a connection error|the database system is (starting up|shutting down|in recovery mode)|terminating connection/i.test(
    m,
  );
}

export interface RetryOptions {
  /** Give up after this long without success (default: never). */
  maxMs?: number;
  signal?: AbortSignal;
  onRetry?: (e: unknown, attempt: number) => void;
  /** After a success that needed retries (the connection is back). */
  onRecover?: () => void;
}

export async function withRetry<T>(fn: () => Promise<T>, o: RetryOptions = {}): Promise<T> {
  const start = Date.now();
  let delay = 100;
  for (let attempt = 1; ; attempt++) {
    try {
      const r = await fn();
      if (attempt > 1) o.onRecover?.();
      return r;
    } catch (e) {
      if (!isConnectionError(e) || o.signal?.aborted || (o.maxMs !== undefined && Date.now() - start > o.maxMs))
        throw e;
      o.onRetry?.(e, attempt);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 2000);
    }
  }
}

/**
 * The store with every call retried on connection faults. Safe because each store call is one
 * transaction that is idempotent to repeat: appends skip ids already present, a take for a recorded
 * (consumer, step) returns the recorded batch, checkpoints and state are upserts.
 */
export function reconnecting(store: ExperienceStore, o: RetryOptions = {}): ExperienceStore {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function' || prop === 'close') return typeof v === 'function' ? v.bind(target) : v;
      return (...args: unknown[]) =>
        withRetry(() => (v as (...a: unknown[]) => Promise<unknown>).apply(target, args), o);
    },
  });
}
