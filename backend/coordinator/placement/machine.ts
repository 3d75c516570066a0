// Which machine (and process space) this is, for the trainer lease: a holder's pid can be looked up
// only where it was recorded. A hostname proves nothing (cloned VMs, hosts all named `ubuntu`, issue 40
// item 13), nor does /etc/machine-id (cloned images share it). The kernel's boot id is new at every
// boot of every machine, and the pid namespace tells containers of one kernel apart: with both equal,
// a pid the kernel does not know is a process that is gone. Elsewhere (no /proc) nothing is proven.
import { readFileSync, readlinkSync } from 'node:fs';

let cached: string | undefined;

/** `BOOT_ID/PIDNS` on Linux, '' where it cannot be known (then a holder is never taken early). */
export function thisMachine(): string {
  if (cached !== undefined) return cached;
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const pidns = readlinkSync('/proc/self/ns/pid');
    cached = boot && pidns ? `${boot}/${pidns}` : '';
  } catch {
    cached = '';
  }
  return cached;
}
