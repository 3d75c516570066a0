// Which process a pid is right now: a string that changes when the pid is reused. A pid alone names
// whatever process holds that number today (after a reboot or a kill -9, an unrelated one); the pid
// plus its start time names one process for its whole life.
//   Linux: the boot id + field 22 of /proc/PID/stat (start time in clock ticks since boot).
//   Windows: the process's start time from PowerShell (no /proc, no ps).
//   Elsewhere (macOS, BSD, a Linux without /proc): `ps -o lstart= -p PID` (start time to the second).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

function linuxBootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown-boot';
  }
}

/** Field 22 (starttime) of /proc/PID/stat; the command name (field 2) may hold spaces and ')', so count from the last ')'. */
export function procStartTime(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state), so field 22 is rest[19].
  const start = rest[19];
  return start && /^\d+$/.test(start) ? start : null;
}

/** `ps -o lstart= -p PID`: the start time as ps prints it, or null when there is no such process (or no ps). */
export function psStartTime(pid: number): string | null {
  try {
    const out = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    }).trim();
    return out || null;
  } catch {
    return null; // ps exits 1 for a pid it does not find
  }
}

function windowsStartTime(pid: number): string | null {
  try {
    const out = execFileSync(
      'powershell.exe',
      [
        '-NoProfile',
        '-NonInteractive',
        '-Command',
        `(Get-Process -Id ${pid} -ErrorAction Stop).StartTime.ToUniversalTime().ToString('o')`,
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 15_000 },
    ).trim();
    return out || null;
  } catch {
    return null;
  }
}

/**
 * The identity of the process that has `pid` now, or null when there is none or this platform cannot
 * tell (then nothing may be signalled on the strength of a recorded pid).
 */
export function processIdentity(pid: number): string | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  // Linux without /proc mounted (some containers) falls through to ps.
  if (process.platform === 'linux' && existsSync('/proc/self/stat')) {
    const start = procStartTime(pid);
    return start ? `linux:${linuxBootId()}:${start}` : null;
  }
  if (process.platform === 'win32') {
    const start = windowsStartTime(pid);
    return start ? `win32:${start}` : null;
  }
  const start = psStartTime(pid);
  return start ? `ps:${start}` : null;
}
