// How a run is named where several may share a name (`my-run` from three configs): the pick lists of
// Resume, Pause, Stop and Open Buffer and the Runs view say the status, step, start time and a short
// id, so three "my-run failed" can be told apart. Pure (no vscode): tested directly.
import type { RunInfo } from '../../backend/core/protocol.js';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const pad = (n: number) => String(n).padStart(2, '0');

/** `29 Nov 07:15` in local time (the time the user saw the run start). */
export function startedAt(t: number): string {
  const d = new Date(t);
  return `${d.getDate()} ${MONTHS[d.getMonth()]} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * The part of a run id that tells it apart: the random tail of `run-20261129-071500-k3f9` (`k3f9`),
 * else the id's last 6 characters; a short id stays whole.
 */
export function shortRunId(id: string): string {
  const m = /-\d{8}-\d{6}-([a-z0-9]{3,})$/i.exec(id);
  if (m) return m[1]!;
  return id.length <= 10 ? id : `…${id.slice(-6)}`;
}

/** `failed · step 37/50 · started 29 Nov 07:15 · #k3f9` */
export function runFacts(r: RunInfo): string {
  return [
    r.status,
    r.step !== undefined ? (r.totalSteps ? `step ${r.step}/${r.totalSteps}` : `step ${r.step}`) : undefined,
    r.createdAt !== undefined ? `started ${startedAt(r.createdAt)}` : undefined,
    `#${shortRunId(r.id)}`,
  ]
    .filter(Boolean)
    .join(' · ');
}

export interface RunPickItem {
  label: string;
  description: string;
  detail: string;
  id: string;
}

/** Pick-list items, newest run first: the name, then status, step, start time and short id; the full id below. */
export function runPickItems(runs: readonly RunInfo[]): RunPickItem[] {
  return [...runs]
    .sort((a, b) => (b.createdAt ?? 0) - (a.createdAt ?? 0))
    .map((r) => ({ label: r.name ?? r.id, description: runFacts(r), detail: r.id, id: r.id }));
}
