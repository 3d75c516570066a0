// The trainer's own database link, as its retried queries see it: when it failed, for how long, and
// the last error. Its wait lines say so instead of blaming the explorers (wait-reason.ts), and each
// outage gets two lines of its own: when it starts (the first failed query) and when it ends.
import { logger } from '../../core/log.js';
import type { RetryOptions } from '../../buffer/queue/retry.js';
import type { LinkOutage } from './wait-reason.js';

const log = logger('dist-trainer');

export class LinkWatch {
  private failingSince: number | null = null;
  private lastError = '';
  /** Outages that ended: [from, to] in ms (the newest few). */
  private readonly ended: [number, number][] = [];

  constructor(private readonly now: () => number = Date.now) {}

  /** Retry options that report to this watch (a query failing on the connection, then succeeding). */
  retry(o: RetryOptions = {}): RetryOptions {
    return {
      ...o,
      onRetry: (e, attempt) => {
        this.failed(e);
        o.onRetry?.(e, attempt);
      },
      onRecover: () => {
        this.recovered();
        o.onRecover?.();
      },
    };
  }

  failed(e: unknown): void {
    const t = this.now();
    this.lastError = (e as Error)?.message ?? String(e);
    if (this.failingSince !== null) return;
    this.failingSince = t;
    log.warn(`database unreachable since ${new Date(t).toISOString()}: ${this.lastError} (retrying)`);
  }

  recovered(): void {
    if (this.failingSince === null) return;
    const t = this.now();
    log.info(`database back after ${((t - this.failingSince) / 1000).toFixed(0)} s`);
    this.ended.push([this.failingSince, t]);
    if (this.ended.length > 16) this.ended.shift();
    this.failingSince = null;
  }

  /** The outage time within [since, now], or null when the link did not fail in it. */
  outageSince(since: number): LinkOutage | null {
    const t = this.now();
    let ms = 0;
    for (const [a, b] of this.ended) ms += Math.max(0, Math.min(b, t) - Math.max(a, since));
    if (this.failingSince !== null) ms += t - Math.max(this.failingSince, since);
    if (ms <= 0 && this.failingSince === null) return null;
    return { ms, error: this.lastError, ongoing: this.failingSince !== null };
  }
}
