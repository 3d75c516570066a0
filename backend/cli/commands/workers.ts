// `rft workers --buffer postgres://... --run RUN [--json]`: every worker of a distributed run (host,
// state, model version, throughput, last heartbeat) and the job queue's counts.
import { command, flagString } from '../command.js';
import { JobQueue } from '../../buffer/queue/job-queue.js';
import { formatWorkers } from '../../coordinator/distributed/setup.js';

command({
  name: 'workers',
  usage: 'workers --buffer postgres://... --run RUN [--json]',
  summary: 'the workers of a distributed run and its job queue',
  booleanFlags: ['json'],
  run: async (args) => {
    const url = flagString(args, 'buffer');
    const runId = flagString(args, 'run');
    if (!url || !runId) {
      console.error('usage: rft workers --buffer postgres://... --run RUN [--json]');
      return 2;
    }
    const q = await JobQueue.open(url);
    try {
      const workers = await q.workers(runId);
      const jobs = await q.counts(runId);
      if (args.flags.json) console.log(JSON.stringify({ run: runId, jobs, workers }));
      else console.log(`jobs ${JSON.stringify(jobs)}\n${formatWorkers(workers)}`);
      return 0;
    } finally {
      await q.close();
    }
  },
});
