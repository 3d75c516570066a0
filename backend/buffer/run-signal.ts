// Signalling a run's process (`rft stop` / `rft pause`, the server's runs/stop): only the process that
// wrote the run's `run.pid` and is still alive under that pid (core/pid-file.ts checks its start
// time). A pid file left by a run killed -9, or from before a reboot, may name an unrelated process
// now: that one is never signalled, and a run still marked running is marked stopped.
import { join } from 'node:path';
import { checkPidFile } from '../core/pid-file.js';
import type { RunRecord, RunRegistry } from './runs.js';

export type RunSignalResult =
  | { sent: true; pid: number }
  /** Nothing signalled; `message` says why (and what the user can do), `marked` the status written. */
  | { sent: false; live: boolean; pid?: number; message: string; marked?: 'stopped' };

export interface RunSignalOptions {
  /** How long to wait for the pid file of a run that is marked running but has written none yet (just started). */
  startWaitMs?: number;
}

export async function signalRun(
  reg: RunRegistry,
  rec: RunRecord,
  signal: NodeJS.Signals,
  o: RunSignalOptions = {},
): Promise<RunSignalResult> {
  const file = join(rec.dir, 'run.pid');
  let c = checkPidFile(file, rec.id);
  // A run marked running writes its pid file a moment after it registers: give it that moment.
  const end = Date.now() + (o.startWaitMs ?? 5000);
  while (c.state === 'gone' && c.pid === undefined && rec.status === 'running' && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    c = checkPidFile(file, rec.id);
  }
  if (c.state === 'live') {
    try {
      process.kill(c.pid, signal);
      return { sent: true, pid: c.pid };
    } catch (e) {
      // Exited between the check and the signal.
      if ((e as NodeJS.ErrnoException).code !== 'ESRCH') throw e;
      c = { state: 'gone', pid: c.pid, why: `pid ${c.pid} exited` };
    }
  }
  if (c.state === 'unverified')
    return {
      sent: false,
      live: true,
      pid: c.pid,
      message: `run '${rec.id}': ${c.why}; nothing signalled. If pid ${c.pid} is this run, signal it yourself (kill -${signal.replace(/^SIG/, '')} ${c.pid}); if not, delete ${file}`,
    };
  let message = `run '${rec.id}' has no live process (${c.why}); nothing signalled`;
  // Marked running, with a pid file whose process is gone: it was killed. Say so in the registry.
  // (No pid file at all is left alone: the run may be starting, or ended and wrote its own status.)
  if (rec.status === 'running' && c.pid !== undefined) {
    await reg.setStatus(
      rec.id,
      'stopped',
      `its process was gone when ${signal === 'SIGUSR2' ? 'pause' : 'stop'} was asked (${c.why})`,
    );
    message += `; marked stopped (rft resume ${rec.id} continues it)`;
    return { sent: false, live: false, pid: c.pid, message, marked: 'stopped' };
  }
  return {
    sent: false,
    live: false,
    ...(c.pid !== undefined ? { pid: c.pid } : {}),
    message: `${message} (status ${rec.status})`,
  };
}
