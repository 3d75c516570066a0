// `rft workers --buffer postgres://... --run RUN [--json]`: every worker of a distributed run (host,
// state, model version, throughput, last heartbeat) and the job queue's counts. Exits 1 for a run id
// the database does not know; workers silent for 10 minutes are pruned (JobQueue.workers).
import { command } from '../command.js';
import { DIST_FLAGS } from './distributed-flags.js';
import { JobQueue } from '../../buffer/queue/job-queue.js';
import { parsePostgresUrl } from '../../buffer/storage/postgres.js';
import { formatWorkers } from '../../coordinator/distributed/setup.js';
import { checkRunId } from '../../core/run-id.js';
import { trainerLostLine } from '../../coordinator/distributed/trainer-lost.js';

export const workersCommand = command({
  name: 'workers',
  summary: 'the workers of a distributed run and its job queue',
  flags: { ...DIST_FLAGS, json: { type: 'boolean', description: 'the workers and job counts as JSON' } },
  run: async ({ flags }) => {
    const { buffer: url, run: runId } = flags;
    // The id names folders (WEIGHTS/RUN/vN): `../outside` is refused here, by its flag.
    checkRunId(runId, '--run');
    const q = await JobQueue.open(url);
    try {
      // A mistyped run id must not look like an idle run.
      if (!(await q.runExists(runId))) {
        console.error(
          `rft workers: no distributed run '${runId}' in ${parsePostgresUrl(url).display} (create it with \`rft coordinator CONFIG --buffer URL --run ${runId} --weights DIR\`)`,
        );
        return 1;
      }
      const workers = await q.workers(runId);
      const jobs = await q.counts(runId);
      // A lost trainer (its row may be pruned already): from its lease row.
      const trainerLost = await trainerLostLine(q, runId);
      if (flags.json) console.log(JSON.stringify({ run: runId, jobs, workers, trainerLost }));
      else
        console.log(`jobs ${JSON.stringify(jobs)}\n${formatWorkers(workers)}${trainerLost ? `\n${trainerLost}` : ''}`);
      return 0;
    } finally {
      await q.close();
    }
  },
});
