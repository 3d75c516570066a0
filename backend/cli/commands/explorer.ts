// `rft explorer --buffer postgres://... --run RUN`: join a distributed run as a rollout worker.
// SIGTERM / Ctrl-C: finish the current job, give back unstarted leases, exit.
import { command, flagNumber, flagString } from '../command.js';
import { distributedExplorer } from '../../coordinator/distributed/explorer.js';

command({
  name: 'explorer',
  usage: 'explorer --buffer postgres://... --run RUN [--batch N] [--lease-ms MS] [--weights-cache DIR]',
  summary: 'a rollout worker of a distributed run (any machine that reaches the database and the trainer)',
  flags: ['buffer', 'run', 'batch', 'lease-ms', 'weights-cache'],
  run: async (args) => {
    const url = flagString(args, 'buffer');
    const runId = flagString(args, 'run');
    if (!url || !runId) {
      console.error('usage: rft explorer --buffer postgres://... --run RUN [--batch N] [--lease-ms MS] [--weights-cache DIR]');
      return 2;
    }
    const ac = new AbortController();
    const stop = () => (ac.signal.aborted ? process.exit(143) : ac.abort());
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    const r = await distributedExplorer({
      url, runId, signal: ac.signal,
      batch: args.flags.batch !== undefined ? flagNumber(args, 'batch', 1) : undefined,
      leaseMs: args.flags['lease-ms'] !== undefined ? flagNumber(args, 'lease-ms', 10_000) : undefined,
      cacheDir: flagString(args, 'weights-cache'),
    });
    console.log(JSON.stringify({ kind: 'explorer_result', ...r }));
    return 0;
  },
});
