// A run whose trainer died (issue 40 item 15): explorers used to wait `no job planned yet` forever and
// `rft status` said `trainer none`. The trainer's lease row (renewed with every heartbeat, released
// when it stops, never pruned) tells when it was last heard of; explorers and `rft status` say
// "trainer lost N s ago (last heartbeat ...)", and an explorer gives up after a wait of its own.
import type pg from 'pg';
import { ConflictError } from '../../core/errors.js';
import { NOW_MS } from '../../buffer/queue/schema.js';
import { SILENT_AFTER_S } from './wait-reason.js';

/** How long an explorer waits for a lost trainer before it exits (`rft explorer --trainer-wait S`). */
export const DEFAULT_TRAINER_WAIT_S = 600;

/** The run's trainer as its lease row has it: its last renewal (the database's clock) and whether it stopped. */
export interface TrainerSeen {
  holder: string;
  host: string;
  pid: number;
  lastBeat: number;
  /** Seconds since lastBeat, on the database's clock. */
  ageS: number;
  /** It gave the lease back (stopped, or ended without finishing the run). */
  released: boolean;
}

/** The run's trainer, or null when no trainer ever joined it. */
export async function trainerSeen(pool: Pick<pg.Pool, 'query'>, runId: string): Promise<TrainerSeen | null> {
  const t = (await pool.query(`SELECT to_regclass('rft_trainer_lease') IS NOT NULL AS e`)).rows[0] as { e: boolean };
  if (!t.e) return null;
  const r = (
    await pool.query(
      `SELECT holder, host, pid, renewed_at, released, (${NOW_MS} - renewed_at) / 1000 AS age_s FROM rft_trainer_lease WHERE run_id = $1 AND epoch > 0`,
      [runId],
    )
  ).rows[0] as Record<string, unknown> | undefined;
  if (!r) return null;
  return {
    holder: String(r.holder),
    host: String(r.host),
    pid: Number(r.pid),
    lastBeat: Number(r.renewed_at),
    ageS: Math.max(0, Number(r.age_s)),
    released: Number(r.released) !== 0,
  };
}

/** Lost: it stopped, or has been silent as long as a worker counts as silent (killed, frozen, cut off). */
export function trainerLost(s: TrainerSeen | null): s is TrainerSeen {
  return s !== null && (s.released || s.ageS > SILENT_AFTER_S);
}

export function lostLine(s: TrainerSeen): string {
  return (
    `trainer lost ${Math.round(s.ageS)} s ago (last heartbeat ${new Date(s.lastBeat).toISOString()}, ` +
    `${s.holder} on ${s.host}, pid ${s.pid}${s.released ? ', which stopped' : ''})`
  );
}

/** An explorer gave up on a lost trainer: `rft explorer` exits 3 with its message. */
export class TrainerLostError extends ConflictError {
  constructor(s: TrainerSeen, waitS: number) {
    super(
      `${lostLine(s)}; this explorer waited ${waitS} s for it (--trainer-wait) and exits. ` +
        'Start the trainer again (`rft trainer --buffer URL --run RUN`: it resumes), then the explorers.',
    );
    this.name = 'TrainerLostError';
  }
}

/** The explorer's view of its trainer while it waits for work, read at most every `everyMs`. */
export class TrainerWatch {
  private seen: TrainerSeen | null = null;
  private readAt = 0;
  private readAtAge = 0;

  constructor(
    private readonly pool: Pick<pg.Pool, 'query'>,
    private readonly runId: string,
    /** 0: wait forever. */
    private readonly waitS: number,
    private readonly everyMs = 5000,
  ) {}

  /** A line for the wait when the trainer is lost, else null; TrainerLostError once it has been silent waitS. */
  async check(): Promise<string | null> {
    const now = Date.now();
    if (now - this.readAt >= this.everyMs) {
      this.seen = await trainerSeen(this.pool, this.runId);
      this.readAt = now;
      this.readAtAge = this.seen?.ageS ?? 0;
    }
    if (!this.seen) return null;
    // Between reads the age grows on this clock (only differences of it are used).
    const s = { ...this.seen, ageS: this.readAtAge + (now - this.readAt) / 1000 };
    if (!trainerLost(s)) return null;
    if (this.waitS > 0 && s.ageS >= this.waitS) throw new TrainerLostError(s, this.waitS);
    return lostLine(s);
  }
}

/** What `rft status`, `rft workers` and the Workers view say of a run's trainer when it is lost and the run is not done; else null. */
export async function trainerLostLine(
  q: { pool: Pick<pg.Pool, 'query'>; getState(runId: string, key: string): Promise<unknown> },
  runId: string,
): Promise<string | null> {
  if ((await q.getState(runId, 'dist:done')) !== null) return null;
  const s = await trainerSeen(q.pool, runId);
  return trainerLost(s) ? lostLine(s) : null;
}
