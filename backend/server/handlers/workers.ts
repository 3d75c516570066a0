// workers/list: the workers of a distributed run (PostgreSQL buffer) for the extension's status view.
// One connection pool per database URL, kept while the server runs (the view polls).
import type { RpcHost } from '../rpc.js';
import type { Disposable } from '../ports.js';
import { JobQueue } from '../../buffer/queue/job-queue.js';
import { InputError } from '../../core/errors.js';
import { trainerLostLine } from '../../coordinator/distributed/trainer-lost.js';

export function registerWorkers(rpc: RpcHost): Disposable {
  const queues = new Map<string, Promise<JobQueue>>();
  const queue = (url: string) => {
    let q = queues.get(url);
    if (!q) {
      q = JobQueue.open(url, { poolSize: 1 });
      q.catch(() => queues.delete(url));
      queues.set(url, q);
    }
    return q;
  };
  rpc.on('workers/list', async (p) => {
    if (typeof p.buffer !== 'string' || !/^postgres(ql)?:\/\//.test(p.buffer))
      throw new InputError('a postgres:// URL of a distributed run', { field: 'buffer' });
    if (typeof p.runId !== 'string' || !p.runId) throw new InputError('required', { field: 'runId' });
    const q = await queue(p.buffer);
    return {
      jobs: await q.counts(p.runId),
      workers: await q.workers(p.runId),
      trainerLost: await trainerLostLine(q, p.runId),
    };
  });
  return {
    dispose: async () =>
      void (await Promise.all([...queues.values()].map(async (q) => (await q.catch(() => null))?.close()))),
  };
}
