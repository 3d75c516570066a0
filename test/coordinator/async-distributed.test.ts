// synchronizer.schedule async in a distributed run (PostgreSQL): the trainer plans jobs max_staleness steps
// ahead, none of them gated by a weights version (each runs with any version from the stage's start),
// and the explorer takes the newest weights it can load. Shown: the explorer never waited for weights
// (its wait counters), it ran ahead of the weights it used, every trained experience is within
// max_staleness, and a trainer stopped inside MIX resumes and finishes with every step trained once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/index.js';
import { JobQueue } from '../../backend/buffer/queue/job-queue.js';
import { checkDistributedConfig, createDistributedRun } from '../../backend/coordinator/distributed/setup.js';
import { distributedExplorer } from '../../backend/coordinator/distributed/explorer.js';
import { distributedTrainer } from '../../backend/coordinator/placement/distributed.js';
import { jobSync } from '../../backend/coordinator/distributed/jobs-plan.js';
import { pgSchemaUrl, startPg } from '../buffer/storage-helpers.js';
import { tinyConfig } from './tiny-config.js';

const STALE = 2;
const MIX = 8;
const asyncCfg = () =>
  tinyConfig({ sync_offset: 0 }, MIX, {
    buffer: { storage: 'sqlite', max_staleness: STALE },
    placement: 'checkpoint',
    synchronizer: { schedule: 'async' },
  });

test('distributed async: jobs planned max_staleness ahead, none gated by a version', () => {
  const cfg = asyncCfg();
  assert.equal(checkDistributedConfig(cfg), null);
  const { sync, lead } = jobSync(cfg, 2);
  assert.equal(lead, STALE);
  assert.equal(sync.offset, Infinity);
  const one = tinyConfig({ sync_offset: 1 });
  assert.deepEqual({ offset: jobSync(one, 0).sync.offset, lead: jobSync(one, 0).lead }, { offset: 1, lead: 1 });
});

test('distributed async (PostgreSQL): the explorer never waits for weights, runs ahead, trains within max_staleness; a stopped trainer resumes', async (t) => {
  const pg = startPg();
  if ('skip' in pg) return t.skip(pg.skip);
  const dir = mkdtempSync(join(tmpdir(), 'rft-async-dist-'));
  try {
    const url = pgSchemaUrl(pg.url);
    await createDistributedRun(asyncCfg(), url, 'da', join(dir, 'weights'));
    const out = join(dir, 'out');
    const stopEx = new AbortController();
    const explorer = distributedExplorer({ url, runId: 'da', signal: stopEx.signal, leaseMs: 20_000 });
    let ex;
    try {
      // Stopped after 3 MIX steps, started again: it resumes from its newest checkpoint.
      const stop = new AbortController();
      const mixSteps = () =>
        existsSync(join(out, 'metrics.jsonl'))
          ? readFileSync(join(out, 'metrics.jsonl'), 'utf8')
              .split('\n')
              .filter((l) => l.includes('"kind":"train"') && l.includes('"stage":"mix"')).length
          : 0;
      const poll = setInterval(() => mixSteps() >= 3 && stop.abort(), 20);
      const first = await distributedTrainer({ url, runId: 'da', outDir: out, signal: stop.signal }).finally(() =>
        clearInterval(poll),
      );
      assert.equal(first.done, false);
      const second = await distributedTrainer({ url, runId: 'da', outDir: out });
      assert.equal(second.done, true);
      assert.equal(second.step, 2 + MIX);
    } finally {
      stopEx.abort();
      ex = await explorer;
    }
    assert.ok(ex.jobs > 0);
    assert.equal(ex.waitS.weights, 0, `async: the explorer waited ${ex.waitS.weights} s for weights`);
    t.diagnostic(
      `explorer: ${ex.jobs} jobs, busy ${ex.busyS.toFixed(1)} s, waited for jobs ${ex.waitS.jobs.toFixed(1)} s, for weights ${ex.waitS.weights} s, wall ${ex.wallS.toFixed(1)} s`,
    );
    const q = await JobQueue.open(url);
    try {
      assert.equal(await q.versionGated('da', 2), 0, 'no job of the MIX stage (start v2) needs a newer version');
    } finally {
      await q.close();
    }
    const recs = readFileSync(join(out, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      recs.filter((x) => x.kind === 'train' && x.stage === 'mix').map((x) => x.step),
      Array.from({ length: MIX }, (_, i) => 2 + i),
      'every MIX step trained once',
    );
    const store = await openStore(url);
    try {
      const usual = await store.list({ runId: 'da', source: 'usual', limit: 10_000 });
      // Job t:k feeds step t; the weights that made it are its model version. Jobs are planned at most
      // max_staleness steps past the trainer's step, and the explorer loads the newest version before
      // each lease (a version published between that check and the lease adds one).
      const ahead = usual.map((e) => Number(String(e.metadata?.job).split(':')[0]) - e.modelVersion);
      assert.ok(Math.max(...ahead) >= 1, `the explorer never ran ahead of its weights: ${[...new Set(ahead)]}`);
      assert.ok(Math.max(...ahead) <= STALE + 1, `the explorer ran ${Math.max(...ahead)} steps ahead of its weights`);
      const seen = new Set<string>();
      for (let step = 2; step < 2 + MIX; step++) {
        const batch = (await store.getMany(await store.consumed('trainer', step, 'da'))).filter(
          (e) => e.source === 'usual',
        );
        assert.ok(batch.length > 0, `step ${step} trained on rollouts`);
        for (const e of batch) {
          assert.ok(
            e.modelVersion <= step && e.modelVersion >= step - STALE,
            `step ${step}: v${e.modelVersion} outside the bound ${STALE}`,
          );
          assert.ok(!seen.has(e.id), `${e.id} trained twice`);
          seen.add(e.id);
        }
      }
    } finally {
      await store.close();
    }
  } finally {
    pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
