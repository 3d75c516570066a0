// When to restart a backend that died: exponential back-off, and give up after too many deaths
// in a short window (a backend that crashes at start would otherwise loop forever).
export interface RestartPolicyOptions {
  baseDelayMs: number;
  maxDelayMs: number;
  maxRestarts: number;
  windowMs: number;
}

export const DEFAULT_RESTART: RestartPolicyOptions = {
  baseDelayMs: 500,
  maxDelayMs: 8000,
  maxRestarts: 5,
  windowMs: 60_000,
};

export class RestartPolicy {
  private deaths: number[] = [];
  constructor(private readonly o: RestartPolicyOptions = DEFAULT_RESTART) {}

  /** Records a death at `now`; returns the delay before the next start, or null to give up. */
  onDeath(now: number): number | null {
    this.deaths = this.deaths.filter((t) => now - t < this.o.windowMs);
    this.deaths.push(now);
    if (this.deaths.length > this.o.maxRestarts) return null;
    return Math.min(this.o.maxDelayMs, this.o.baseDelayMs * 2 ** (this.deaths.length - 1));
  }

  reset(): void {
    this.deaths = [];
  }
}
