// Failed `server/auth` attempts on TCP, rate-limited: a token bucket of failures (a burst, then a
// few a second). A wrong-token guess cost nothing before (~1,430 guesses a second); now, once the
// bucket is empty, every attempt is refused unchecked until it refills. A right token spends nothing.
export class AuthFailureLimit {
  private tokens: number;
  private at: number;

  constructor(
    readonly burst = 20,
    readonly perSecond = 5,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = burst;
    this.at = now();
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.at) / 1000) * this.perSecond);
    this.at = t;
  }

  /** Undefined when an attempt may be checked now, else the seconds until one may. */
  waitSeconds(): number | undefined {
    this.refill();
    return this.tokens >= 1 ? undefined : (1 - this.tokens) / this.perSecond;
  }

  failed(): void {
    this.refill();
    this.tokens = Math.max(0, this.tokens - 1);
  }
}
