// `rft coordinator CONFIG --buffer postgres://... --run RUN --weights DIR [--watch]`: create a
// distributed run in PostgreSQL; with --watch, print the workers every few seconds until it is done.
import { command, flagNumber, flagString } from '../command.js';
import { loadRunConfig } from '../../coordinator/load-config.js';
import { createDistributedRun, formatWorkers } from '../../coordinator/distributed/setup.js';
import { JobQueue } from '../../buffer/queue/job-queue.js';
import { withRetry } from '../../buffer/queue/retry.js';

const usage = 'coordinator CONFIG --buffer postgres://... --run RUN --weights DIR [--watch] [--every S]';

command({
  name: 'coordinator',
  usage,
  summary: 'create a distributed run (buffer and job queue in PostgreSQL); explorers and trainers join it',
  booleanFlags: ['watch'],
  flags: ['buffer', 'run', 'weights', 'every'],
  run: async (args) => {
    const file = args.positional[0];
    const url = flagString(args, 'buffer');
    const runId = flagString(args, 'run');
    const weights = flagString(args, 'weights');
    if (!file || !url || !runId || !weights) {
      console.error(`usage: rft ${usage}`);
      return 2;
    }
    if (!/^postgres(ql)?:\/\//.test(url)) {
      console.error('--buffer: a distributed run needs a postgres:// URL');
      return 2;
    }
    const r = await createDistributedRun(loadRunConfig(file), url, runId, weights);
    console.log(JSON.stringify({ run: runId, ...r }));
    if (!args.flags.watch) return 0;
    const q = await withRetry(() => JobQueue.open(url));
    try {
      for (;;) {
        const done = await withRetry(() => q.getState(runId, 'dist:done'));
        console.log(`\n${new Date().toISOString()} jobs ${JSON.stringify(await withRetry(() => q.counts(runId)))}`);
        console.log(formatWorkers(await withRetry(() => q.workers(runId))));
        if (done) return 0;
        await new Promise((res) => setTimeout(res, flagNumber(args, 'every', 5) * 1000));
      }
    } finally {
      await q.close();
    }
  },
});
