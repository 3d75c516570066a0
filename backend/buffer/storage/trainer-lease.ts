// One trainer per distributed run, fenced (issue 24). A trainer takes the run's lease (a row in
// trainer_lease) with a new epoch; every write of a trainer (checkpoint records, consumption, run
// state) compares its epoch with the row's in the same transaction, so a trainer whose lease was
// taken over (it lost the network, then came back) can never overwrite or publish.
import { ConflictError } from '../../core/errors.js';

/** Who holds a run's trainer lease, as the database has it. Times are the database clock, ms. */
export interface TrainerLeaseRow {
  runId: string;
  epoch: number;
  holder: string;
  host: string;
  pid: number;
  /** The holder's boot id and pid namespace (placement/machine.ts), '' when unknown: where its pid means something. */
  machine: string;
  since: number;
  renewedAt: number;
  released: boolean;
}

/** A holder that stops renewing for this long has lost its lease (a step blocks the event loop; keep it well above one step). */
export const DEFAULT_TRAINER_LEASE_TIMEOUT_MS = 120_000;

export interface AcquireTrainerLease {
  holder: string;
  host: string;
  pid: number;
  /** This process's machine (placement/machine.ts thisMachine), recorded for the next trainer's holderGone. */
  machine?: string;
  /** Default DEFAULT_TRAINER_LEASE_TIMEOUT_MS. */
  timeoutMs?: number;
  /** Take the lease even from a live holder (`rft trainer --take-over`): that trainer stops at its next write. */
  takeOver?: boolean;
  /** True when the holder is proven gone (its process is dead, on this very machine): the lease is taken at once. */
  holderGone?: (h: TrainerLeaseRow) => boolean;
}

/** A lease row's time for a message: a NaN or absurd value in the row (edited by hand) is said, not thrown as "Invalid time value". */
function when(ms: number): string {
  const d = new Date(ms);
  return Number.isFinite(d.getTime()) ? d.toISOString() : `an unreadable time (${ms} in the lease row)`;
}

function who(h: TrainerLeaseRow): string {
  return `${h.holder} (host ${h.host}, pid ${h.pid}, epoch ${h.epoch})`;
}

/** A second trainer at start: the run's lease is held by a trainer that renews it. */
export class TrainerLeaseHeldError extends ConflictError {
  constructor(
    readonly lease: TrainerLeaseRow,
    now: number,
    timeoutMs: number,
  ) {
    const ago = Number.isFinite(lease.renewedAt) ? Math.max(0, Math.round((now - lease.renewedAt) / 1000)) : '?';
    const left = Number.isFinite(lease.renewedAt)
      ? Math.max(1, Math.ceil((lease.renewedAt + timeoutMs - now) / 1000))
      : '?';
    super(
      `run ${lease.runId}: another trainer holds it: ${who(lease)} since ${when(lease.since)}, last renewed ${ago} s ago. ` +
        `Two trainers on one run overwrite each other's checkpoints, so this one does not start. Stop that trainer first; ` +
        `if it is gone, its lease expires ${Math.round(timeoutMs / 1000)} s after its last renewal (in about ${left} s), ` +
        `or start this one with --take-over (the other then stops at its next write).`,
    );
    this.name = 'TrainerLeaseHeldError';
  }
}

/** A trainer whose lease another trainer took (or that released it): it must not write to the run. */
export class TrainerFencedError extends ConflictError {
  constructor(runId: string, mine: number, now: TrainerLeaseRow | null, what: string) {
    super(
      `run ${runId}: this trainer (epoch ${mine}) lost the run's lease to ` +
        (now && !now.released ? `${who(now)}, which holds it since ${when(now.since)}` : `nobody (it was released)`) +
        `; ${what} not written. Nothing more is written by this trainer: it stops. ` +
        `The run goes on with the current holder; to train here instead, stop that one and start this trainer again.`,
    );
    this.name = 'TrainerFencedError';
  }
}

export function leaseFromRow(r: Record<string, unknown>): TrainerLeaseRow {
  return {
    runId: String(r.run_id),
    epoch: Number(r.epoch),
    holder: String(r.holder),
    host: String(r.host),
    pid: Number(r.pid),
    machine: r.machine === undefined || r.machine === null ? '' : String(r.machine),
    since: Number(r.since),
    renewedAt: Number(r.renewed_at),
    released: Number(r.released) !== 0,
  };
}

/** What the fence check needs of a connection (a pg client inside the write's transaction). */
export interface LeaseQuery {
  query(sql: string, params: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * In a write's transaction: the run's lease still has epoch MINE, else TrainerFencedError. FOR SHARE
 * makes a takeover (FOR UPDATE) wait for this write to commit, so no write lands after a takeover.
 */
export async function checkLeaseEpoch(c: LeaseQuery, runId: string, mine: number, what: string): Promise<void> {
  const r = (await c.query('SELECT * FROM rft_trainer_lease WHERE run_id = $1 FOR SHARE', [runId])).rows[0] as
    | Record<string, unknown>
    | undefined;
  const cur = r ? leaseFromRow(r) : null;
  if (!cur || cur.epoch !== mine || cur.released) throw new TrainerFencedError(runId, mine, cur, what);
}
