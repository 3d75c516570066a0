// The distributed trainer's heartbeat: its row in the Workers view (state, version, steps, throughput)
// written every beat, with the run's trainer lease renewed at the same time. A renewal that finds the
// lease taken over fences the trainer: it records why and aborts the run (its next write would be
// refused by the epoch anyway), so a trainer that lost its run stops instead of training on.
import { logger } from '../../core/log.js';
import type { PostgresStore } from '../../buffer/storage/postgres.js';
import { TrainerFencedError } from '../../buffer/storage/trainer-lease.js';
import type { JobQueue } from '../../buffer/queue/job-queue.js';
import type { TrainerStatus } from './distributed-run.js';

const log = logger('dist-trainer');

export class TrainerBeat {
  /** The row's state; the run (distributed-run.ts) updates it as it trains and publishes. */
  readonly status: TrainerStatus = { state: 'starting', detail: '', version: null, steps: 0 };
  /** Set when a renewal found the run taken over (or the run's own write was fenced). */
  fenced: TrainerFencedError | null = null;
  private renewing = true;
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly t0 = Date.now();

  constructor(
    private readonly raw: PostgresStore,
    private readonly q: JobQueue,
    private readonly runId: string,
    private readonly id: string,
    private readonly onFenced: () => void,
  ) {}

  /** One beat now (a worker shows up as soon as it joins), then one every `ms`. */
  async start(ms: number): Promise<void> {
    await this.beat();
    this.timer = setInterval(() => void this.beat(), ms);
  }

  /** A run's write was fenced: the trainer stops as after a failed renewal. */
  fence(e: TrainerFencedError): void {
    this.fenced ??= e;
    this.status.state = 'fenced';
    this.status.detail = e.message;
  }

  /** No more renewals (the lease is about to be released); the last beat shows the final state. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.renewing = false;
    await this.beat();
  }

  private beat(): Promise<void> {
    const span = (Date.now() - this.t0) / 1000;
    // The lease is renewed with the heartbeat; a lost connection is retried at the next beat.
    if (this.renewing && !this.fenced)
      void this.raw.renewTrainerLease(this.runId).catch((e: unknown) => {
        if (!(e instanceof TrainerFencedError) || this.fenced || !this.renewing) return;
        this.fenced = e;
        log.error(e.message);
        this.onFenced();
      });
    const s = this.status;
    return this.q
      .heartbeat(this.runId, {
        id: this.id,
        role: 'trainer',
        state: s.state,
        detail: s.detail,
        modelVersion: s.version,
        done: s.steps,
        throughput: span > 0 ? s.steps / span : 0,
        startedAt: this.t0,
      })
      .catch(() => undefined);
  }
}
