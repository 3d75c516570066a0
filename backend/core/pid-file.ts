// Pid files that can be checked: `{"pid", "owner", "identity"}` (owner: the run id or component,
// identity: process-identity.ts), so a file left by a run that was killed -9, or from before a
// reboot, is never taken for a live run when its pid now belongs to some unrelated process.
// Whoever signals a recorded pid signals only a `live` one.
import { readFileSync } from 'node:fs';
import { processIdentity } from './process-identity.js';

export interface PidFileRecord {
  pid: number;
  owner?: string;
  identity?: string | null;
  /** A bare pid (written before pid files recorded more): the process cannot be checked. */
  legacy: boolean;
}

/** The pid file's text for this process. */
export function pidFileText(owner: string): string {
  return JSON.stringify({ pid: process.pid, owner, identity: processIdentity(process.pid) }) + '\n';
}

/** The record in `file`; null when there is no file; 'garbage' when it holds no pid. */
export function readPidFile(file: string): PidFileRecord | null | 'garbage' {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch {
    return null;
  }
  if (/^\d+$/.test(text)) return { pid: Number(text), legacy: true };
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    if (typeof j.pid === 'number' && Number.isInteger(j.pid) && j.pid > 0)
      return {
        pid: j.pid,
        owner: typeof j.owner === 'string' ? j.owner : undefined,
        identity: typeof j.identity === 'string' ? j.identity : null,
        legacy: false,
      };
  } catch {
    // not JSON
  }
  return 'garbage';
}

export type PidCheck =
  /** The process that wrote the file is alive (its identity matches): it may be signalled. */
  | { state: 'live'; pid: number }
  /** A live process has the pid, but nothing recorded can tell whether it is the one: never signal it. */
  | { state: 'unverified'; pid: number; why: string }
  /** No process of this owner: no file, a dead pid, or the pid now belongs to another process. */
  | { state: 'gone'; pid?: number; why: string };

function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

/** Is the process recorded in `file` (by `owner`, when given) still the one running under its pid? */
export function checkPidFile(file: string, owner?: string): PidCheck {
  const rec = readPidFile(file);
  if (rec === null) return { state: 'gone', why: `no pid file ${file}` };
  if (rec === 'garbage') return { state: 'gone', why: `${file} holds no pid` };
  const { pid } = rec;
  const who = owner ?? rec.owner ?? 'its owner';
  if (owner !== undefined && rec.owner !== undefined && rec.owner !== owner)
    return { state: 'gone', pid, why: `${file} was written by '${rec.owner}', not '${owner}'` };
  if (!exists(pid)) return { state: 'gone', pid, why: `pid ${pid} (${file}) is not running` };
  if (rec.legacy)
    return {
      state: 'unverified',
      pid,
      why: `${file} holds only a pid (written by an older version), so pid ${pid} cannot be checked to be '${who}'`,
    };
  if (!rec.identity)
    return { state: 'unverified', pid, why: `${file} records no start time for pid ${pid} (this platform gave none)` };
  const now = processIdentity(pid);
  if (now === null) return { state: 'unverified', pid, why: `the start time of pid ${pid} cannot be read here` };
  if (now !== rec.identity)
    return {
      state: 'gone',
      pid,
      why: `pid ${pid} (${file}) is now another process (its start time is not the recorded one): '${who}' is no longer running`,
    };
  return { state: 'live', pid };
}
