// Processes that user code started (detached ones too: they leave the run's process group, and
// their parent may have exited) are found by a marker in their environment: each user-code thread
// gets `RFT_USER_CODE=<random token>` in its process.env, which child_process passes on to every
// process it starts, and theirs. At a thread's end and at the run's exit every process of this user
// whose environment holds a live token is killed. A 128-bit random token is the proof that a process
// is the code's own (a process that cleared its environment is missed, never mistaken for one).
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';

export const MARKER = 'RFT_USER_CODE';

const tokens = new Set<string>();
let hooked = false;

/** A new token, reaped at the process's exit (and by reapTokens before). */
export function newToken(): string {
  const t = randomBytes(16).toString('hex');
  tokens.add(t);
  if (!hooked) {
    hooked = true;
    process.on('exit', () => reapTokens([...tokens]));
  }
  return t;
}

/** Kills the processes (other than this one) whose environment holds one of TOKENS; how many. Linux only (/proc). */
export function reapTokens(list: string[]): number {
  if (process.platform !== 'linux' || list.length === 0) return 0;
  const needles = list.map((t) => Buffer.from(`${MARKER}=${t}\0`));
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid);
  } catch {
    return 0;
  }
  let n = 0;
  for (const pid of pids) {
    let env: Buffer;
    try {
      // Readable only for this user's processes: another user's are never candidates.
      env = readFileSync(`/proc/${pid}/environ`);
    } catch {
      continue;
    }
    if (!needles.some((x) => env.includes(x))) continue;
    try {
      process.kill(Number(pid), 'SIGKILL');
      n++;
    } catch {
      // Gone meanwhile.
    }
  }
  return n;
}

/** Reaps TOKEN's processes and forgets it. */
export function reapToken(token: string): number {
  tokens.delete(token);
  return reapTokens([token]);
}
