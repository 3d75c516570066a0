// Why a distributed trainer waits for experiences, in one line of its log. Two cases were told wrong
// (issue 24): a trainer that had itself lost the database (its queries retried silently) said "N
// explorer(s) at work" once it was back, and an explorer that stopped reporting (cut off, frozen)
// made it say "no explorer is running" although one was, in error or silent.
import type { WorkerRow } from '../../buffer/queue/job-queue.js';

/** An explorer whose heartbeat is older than this is silent (cut off, frozen or killed). */
export const SILENT_AFTER_S = 10;

/** The trainer's own database link during the wait: total time its queries were failing and the last error. */
export interface LinkOutage {
  ms: number;
  error: string;
  /** Still failing now (this line was written between two failed tries). */
  ongoing: boolean;
}

export function waitReason(workers: WorkerRow[], link: LinkOutage | null): string {
  const parts: string[] = [];
  if (link && link.ms > 0)
    parts.push(
      link.ongoing
        ? `this trainer cannot reach the database (for ${(link.ms / 1000).toFixed(0)} s: ${link.error}); the explorers' state is not known`
        : `this trainer could not reach the database for ${(link.ms / 1000).toFixed(0)} s of this wait (${link.error})`,
    );
  if (link?.ongoing) return parts.join('; ');
  const ex = workers.filter((w) => w.role === 'explorer' && w.state !== 'stopped' && w.state !== 'done');
  const live = ex.filter((w) => w.ageS <= SILENT_AFTER_S);
  const silent = ex.filter((w) => w.ageS > SILENT_AFTER_S);
  const errors = live.filter((w) => w.state === 'error');
  const working = live.length - errors.length;
  if (!ex.length) parts.push('no explorer is running (start `rft explorer --buffer URL --run RUN`)');
  else {
    if (working) parts.push(`${working} explorer(s) at work`);
    if (errors.length) {
      const kinds = [...new Set(errors.map((w) => w.detail ?? ''))];
      parts.push(
        `${errors.length} explorer(s) in error: ${kinds.slice(0, 2).join(' | ')}${kinds.length > 2 ? ` (+${kinds.length - 2} other reason(s))` : ''}`,
      );
    }
    if (silent.length) {
      const last = silent.reduce((a, b) => (a.ageS <= b.ageS ? a : b));
      parts.push(
        `${silent.length} explorer(s) silent (no heartbeat for ${Math.round(last.ageS)} s or more; last: ${last.id} on ${last.host}, ${last.state}${last.detail ? `: ${last.detail}` : ''}) — cut off from the database, frozen or killed`,
      );
    }
    if (!live.length) parts.push('no explorer is reporting');
  }
  return parts.join('; ');
}
