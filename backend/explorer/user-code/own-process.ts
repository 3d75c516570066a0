// The user code's thread shares the run's process: a `process.kill(process.pid, 'SIGKILL')` in a
// reward ended the whole run silently. Installed in that thread before the file loads, this refuses
// a signal aimed at the run's own process, its process group or its parent (the throw is the call's
// error, an infra failure naming the file and line); signals to other processes, the code's own
// children included, and signal 0 (an existence check) pass. `process.abort()` is refused by Node in
// a worker already. The code is trusted (the user's own, loaded only with trust): this stops the
// mistake, not a determined escape (a `kill` run through a shell is not covered).
import { readFileSync } from 'node:fs';

/** This process's group, from /proc (Linux); undefined elsewhere. */
function processGroup(): number | undefined {
  try {
    // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so count from its last ')'.
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    return Number.isInteger(pgrp) && pgrp > 0 ? pgrp : undefined;
  } catch {
    return undefined;
  }
}

export function guardOwnProcess(): void {
  const kill = process.kill.bind(process);
  const group = processGroup();
  const own = new Map<number, string>([
    [process.pid, "the run's own process"],
    [0, "the run's own process group"],
    [-1, 'every process of this user, the run included'],
    [-process.pid, "the run's own process group"],
    [process.ppid, "the run's parent process"],
  ]);
  if (group !== undefined) own.set(-group, "the run's own process group");
  process.kill = ((pid: number, signal?: string | number) => {
    const what = own.get(Number(pid));
    if (what && signal !== 0)
      throw new Error(
        `process.kill(${pid}, ${JSON.stringify(signal ?? 'SIGTERM')}) would signal ${what} (workflow.file runs inside the run): refused`,
      );
    return kill(pid, signal);
  }) as typeof process.kill;
}
