// workers/list over JSON-RPC (`rft serve` as a child process) against a real PostgreSQL: the
// heartbeats of a distributed run's workers and its job counts; a non-postgres buffer is refused.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { JobQueue } from '../../backend/buffer/queue/job-queue.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { spawnServe } from '../../tools/spawn-serve.js';

const server = startPg();
if ('skip' in server) {
  describe('workers/list', () => test('PostgreSQL unavailable', { skip: server.skip }, () => undefined));
} else {
  after(() => server.stop());
  test('workers/list returns heartbeats and job counts', async () => {
    const url = pgSchemaUrl(server.url);
    const q = await JobQueue.open(url);
    const s = spawnServe(['--workspace', tmpdir()]);
    try {
      await q.addJobs('r', [
        { id: '0:0', target: 0, requiredVersion: 0, task: { id: 't', taskset: 'x', prompt: 'p' } as never },
      ]);
      await q.heartbeat('r', {
        id: 'explorer@h:7',
        role: 'explorer',
        state: 'generating',
        detail: 'job 0:0',
        modelVersion: 2,
        done: 16,
        throughput: 4,
        startedAt: Date.now(),
      });
      const r = await s.request('workers/list', { buffer: url, runId: 'r' });
      assert.deepEqual(r.jobs, { queued: 1 });
      assert.equal(r.workers.length, 1);
      assert.equal(r.workers[0]!.state, 'generating');
      assert.equal(r.workers[0]!.modelVersion, 2);
      await assert.rejects(s.request('workers/list', { buffer: '/tmp/x.db', runId: 'r' }), /postgres/);
    } finally {
      await s.close();
      await q.close();
    }
  });
}
