// `rft status`, `rft stop RUN`, `rft report RUN`: runs of the workspace's registry (.rft/runs.json).
import { join } from 'node:path';
import { command, existingWorkspace, WORKSPACE_FLAG, type CliCommand } from '../command.js';
import { JobQueue } from '../../buffer/queue/job-queue.js';
import { withRetry } from '../../buffer/queue/retry.js';
import { distributedRuns, formatDistributedRuns, hasRunTables } from '../../coordinator/distributed/runs-status.js';
import { RunRegistry, type RunRecord } from '../../buffer/runs.js';
import { signalRun } from '../../buffer/run-signal.js';
import { checkPidFile } from '../../core/pid-file.js';
import { MetricsLog, writeReport } from '../../coordinator/monitor.js';

/** The run's live process: its pid file checked against the process now holding the pid (core/pid-file.ts). */
function runPid(r: RunRecord): { pid: number; verified: boolean } | null {
  const c = checkPidFile(join(r.dir, 'run.pid'), r.id);
  return c.state === 'gone' ? null : { pid: c.pid, verified: c.state === 'live' };
}

export const statusCommand = command({
  name: 'status',
  summary:
    'the runs of this workspace: status, step, checkpoints, live process; with --buffer, the distributed runs of that database',
  flags: {
    workspace: WORKSPACE_FLAG,
    buffer: {
      type: 'string',
      value: 'postgres://...',
      description: 'list the distributed runs of this database instead',
    },
  },
  run: async ({ flags }) => {
    const url = flags.buffer;
    if (url !== undefined) {
      // Distributed runs live in their database, not in a workspace.
      if (!/^postgres(ql)?:\/\//.test(url)) {
        console.error(`--buffer ${url}: distributed runs are listed from their postgres:// database`);
        return 2;
      }
      const where = /[?&]schema=/.test(url)
        ? `schema ${new URL(url).searchParams.get('schema')} of this database`
        : 'this database';
      if (!(await hasRunTables(url))) {
        console.log(`no distributed runs in ${where}`);
        return 0;
      }
      const q = await withRetry(() => JobQueue.open(url), { maxMs: 15_000 });
      try {
        const runs = await distributedRuns(q);
        console.log(runs.length ? formatDistributedRuns(runs) : `no distributed runs in ${where}`);
      } finally {
        await q.close();
      }
      return 0;
    }
    const reg = await RunRegistry.open(existingWorkspace(flags.workspace));
    const runs = await reg.list();
    if (runs.length === 0) {
      console.log('no runs (distributed runs are listed by their database: rft status --buffer postgres://...)');
      return 0;
    }
    for (const r of runs) {
      const p = runPid(r);
      // A run marked running whose process is gone was killed: say so, resume continues it.
      const status =
        r.status === 'running' && p === null ? 'running (process gone: rft resume ' + r.id + ')' : r.status;
      console.log(
        `${r.id.padEnd(40)} ${status.padEnd(12)} step ${String(r.lastStep).padStart(5)}  checkpoints ${r.checkpoints.length}${p ? `  pid ${p.pid}${p.verified ? '' : ' (unverified)'}` : ''}`,
      );
    }
    return 0;
  },
});

/**
 * Stop and pause both end the run after its current step with a checkpoint; `rft resume` continues
 * either. Only the run's own live process is signalled (buffer/run-signal.ts).
 */
function signalCommand(name: 'stop' | 'pause', signal: NodeJS.Signals, summary: string): CliCommand {
  return command({
    name,
    args: 'RUN',
    summary,
    flags: { workspace: WORKSPACE_FLAG },
    run: async ({ positional, flags, usage }) => {
      const id = positional[0];
      if (!id) {
        console.error(`usage: ${usage}`);
        return 2;
      }
      const reg = await RunRegistry.open(existingWorkspace(flags.workspace));
      const r = await reg.get(id);
      if (!r) {
        console.error(`no run '${id}' in ${reg.file}`);
        return 1;
      }
      const res = await signalRun(reg, r, signal);
      if (!res.sent) {
        console.error(res.message);
        return 1;
      }
      console.log(`sent ${signal} to ${res.pid}`);
      return 0;
    },
  });
}

export const stopCommand = signalCommand(
  'stop',
  'SIGTERM',
  'stop a running run after its current step (it writes a checkpoint first)',
);
export const pauseCommand = signalCommand(
  'pause',
  'SIGUSR2',
  'pause a running run after its current step (status paused; `rft resume RUN` continues it)',
);

export const reportCommand = command({
  name: 'report',
  args: 'RUN',
  summary: 'write the HTML report of a run from its metrics and print its path',
  flags: { workspace: WORKSPACE_FLAG },
  run: async ({ positional, flags, usage }) => {
    const id = positional[0];
    if (!id) {
      console.error(`usage: ${usage}`);
      return 2;
    }
    const reg = await RunRegistry.open(existingWorkspace(flags.workspace));
    const r = await reg.get(id);
    if (!r) {
      console.error(`no run '${id}' in ${reg.file}`);
      return 1;
    }
    const recs = new MetricsLog(join(r.dir, 'metrics.jsonl')).read();
    const evals = recs.filter((x) => x.kind === 'eval');
    const file = writeReport(join(r.dir, 'report.html'), `RFT Studio run ${id}`, recs, {
      status: r.status,
      last_step: r.lastStep,
      // An evaluation that scored no answer says why (no_result), never 0 or n/a.
      final_accuracy:
        (evals.at(-1)?.accuracy as number | null | undefined) ??
        (evals.at(-1)?.no_result as string | undefined) ??
        'n/a',
    });
    console.log(file);
    return 0;
  },
});
