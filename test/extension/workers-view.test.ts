// The sidebar's Workers view: a distributed run's explorers and trainer from a real `rft serve`
// (workers/list) over a real PostgreSQL job queue; heartbeats turn stale; errors are shown, not thrown.
import '../../tools/fake-vscode/setup.js';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hostname, tmpdir } from 'node:os';
import { JobQueue } from '../../backend/buffer/queue/job-queue.js';
import { PostgresStore } from '../../backend/buffer/storage/postgres.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { spawnServe } from '../../tools/spawn-serve.js';

const vscode = await import('../../tools/fake-vscode/fake-vscode.js');
const { WorkersTree, describeWorker, describeJobs, STALE_HEARTBEAT_S } = await import(
  '../../src/views/workers-tree.js'
);

test('descriptions: state, version, throughput, heartbeat age; job counts without zeros', () => {
  const w = {
    id: 'explorer@a:1',
    host: 'a',
    pid: 1,
    role: 'explorer',
    state: 'generating',
    detail: null,
    modelVersion: 3,
    done: 10,
    throughput: 2.5,
    startedAt: 0,
    lastHeartbeat: 0,
    ageS: 1.4,
  };
  assert.equal(describeWorker(w), 'generating · v3 · 2.5 exp/s · 1 s ago');
  assert.equal(describeWorker({ ...w, role: 'trainer', modelVersion: null }), 'generating · 2.5 steps/s · 1 s ago');
  assert.equal(describeJobs({ queued: 2, leased: 0, done: 5 }), 'queued 2 · done 5');
});

test('no distributed run configured: an empty view (the welcome text says what to set)', async () => {
  vscode.resetFake();
  const tree = new WorkersTree(async () => assert.fail('nothing to fetch'));
  await tree.refresh();
  assert.deepEqual(tree.getChildren(), []);
  assert.equal(tree.summary, '');
});

const server = startPg();
if ('skip' in server) {
  describe('workers view on PostgreSQL', () => test('PostgreSQL unavailable', { skip: server.skip }, () => undefined));
} else {
  after(() => server.stop());
  test('workers of a run from rft serve: sorted, described, a silent worker flagged', async () => {
    vscode.resetFake();
    const url = pgSchemaUrl(server.url);
    const q = await JobQueue.open(url);
    const s = spawnServe(['--workspace', tmpdir()]);
    try {
      await q.addJobs('r', [
        { id: '0:0', target: 0, requiredVersion: 0, task: { id: 't', taskset: 'x', prompt: 'p' } as never },
      ]);
      await q.heartbeat('r', {
        id: 'trainer@h1:9',
        role: 'trainer',
        state: 'training',
        detail: 'step 4',
        modelVersion: 4,
        done: 4,
        throughput: 0.5,
        startedAt: Date.now(),
      });
      await q.heartbeat('r', {
        id: 'explorer@h2:7',
        role: 'explorer',
        state: 'generating',
        detail: 'job 0:0',
        modelVersion: 3,
        done: 16,
        throughput: 4,
        startedAt: Date.now(),
      });
      vscode.settings.set('rftStudio.scaleOut.buffer', url);
      vscode.settings.set('rftStudio.scaleOut.runId', 'r');
      const tree = new WorkersTree((src) => s.request('workers/list', src));
      await tree.refresh();
      assert.equal(tree.summary, 'queued 1');
      const items = tree.getChildren().map((w) => tree.getTreeItem(w));
      // Host and pid are those of the process that sent the heartbeat (here: this test).
      assert.deepEqual(
        items.map((i) => i.label),
        [`explorer ${hostname()}:${process.pid}`, `trainer ${hostname()}:${process.pid}`],
      );
      assert.match(String(items[0]!.description), /^generating · v3 · 4\.0 exp\/s · \d+ s ago$/);
      assert.equal((items[0]!.iconPath as { id: string }).id, 'server-process');
      assert.match(String(items[1]!.tooltip), /detail: step 4/);

      // A worker whose heartbeats stop is flagged once its heartbeat is older than the bound.
      const stale = tree.getTreeItem({ ...tree.getChildren()[0]!, ageS: STALE_HEARTBEAT_S + 5 });
      assert.equal((stale.iconPath as { id: string }).id, 'warning');
      assert.match(String(stale.tooltip), /may be gone or cut off/);

      // Issue 40 item 15: a trainer that stopped renewing its lease (killed) is named above the list,
      // from its lease row (its worker row is pruned after 10 minutes).
      const store = await PostgresStore.open(url);
      try {
        await store.acquireTrainerLease('r', { holder: 'trainer@h1:3', host: 'h1', pid: 3 });
      } finally {
        await store.close();
      }
      await q.pool.query('UPDATE rft_trainer_lease SET renewed_at = renewed_at - 60000');
      await tree.refresh();
      assert.match(
        tree.summary,
        /^trainer lost (6\d|[7-9]\d) s ago \(last heartbeat \d{4}-[^)]*, trainer@h1:3 on h1, pid 3\) · queued 1$/,
      );

      // A buffer that is not PostgreSQL: the view says why instead of throwing.
      await tree.refresh({ buffer: '/tmp/x.db', runId: 'r' });
      assert.deepEqual(tree.getChildren(), []);
      assert.match(tree.summary, /cannot read workers: .*postgres/i);
    } finally {
      await s.close();
      await q.close();
    }
  });
}
