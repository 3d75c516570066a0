// The `fresh` sampler (backend/buffer/sampler/fresh.ts): the newest rows within max_staleness first,
// the default in async. And the sampler's staleness bound (sync-plan.ts samplerStaleness): finding
// from the sync (checkpoint) run on the main job: a re-explored step (FillingExplorer refills a step
// whose samples came back empty) leaves a surplus of its version, and FIFO, oldest first, then trained
// every later sync step on 61 one-version-old rows + 3 fresh ones. Fresh alone did not cure it (it
// takes the wider window while the refill of the current step is still being made); the bound does:
// outside async the sampler never takes rows older than the schedule makes (0 in sync).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/index.js';
import { makeSampler, SampleTimeoutError } from '../../backend/buffer/sampler/index.js';
import { usualSampler, samplerConfig } from '../../backend/coordinator/setup/trainer.js';
import { samplerStaleness } from '../../backend/coordinator/sync-plan.js';
import { makeExp } from '../buffer/storage-helpers.js';
import { tinyConfig } from './tiny-config.js';

test('fresh: the narrowest window of recent versions with a whole batch, oldest first inside it; FIFO for comparison', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-fresh-'));
  const store = await openStore(join(dir, 'b.db'));
  try {
    // A sync run's buffer at trainer step 5: 3 leftovers of v4 (a refilled step's surplus), 4 rows of v5.
    const rows = [
      ...[0, 1, 2].map((i) => makeExp(`v4-${i}`, { modelVersion: 4 })),
      ...[0, 1, 2, 3].map((i) => makeExp(`v5-${i}`, { modelVersion: 5 })),
    ];
    await store.appendExperiences(rows);
    const fresh = makeSampler(store, { type: 'fresh', maxStaleness: 1, consumer: 't' });
    const b5 = await fresh.sample({ batchSize: 4, currentVersion: 5, step: 5, timeoutMs: 0 });
    assert.deepEqual(
      b5.experiences.map((e) => e.id),
      ['v5-0', 'v5-1', 'v5-2', 'v5-3'],
    );
    // The same step asked again (a resumed trainer) gets its recorded batch.
    const again = await fresh.sample({ batchSize: 4, currentVersion: 5, step: 5, timeoutMs: 0 });
    assert.equal(again.replayed, true);
    assert.deepEqual(
      again.experiences.map((e) => e.id),
      b5.experiences.map((e) => e.id),
    );
    // No whole batch of v6 yet: the wider window (v5 and up) within the bound, oldest first.
    await store.appendExperiences([0, 1].map((i) => makeExp(`v6-${i}`, { modelVersion: 6 })));
    await store.appendExperiences([4, 5].map((i) => makeExp(`v5-${i}`, { modelVersion: 5 })));
    const b6 = await fresh.sample({ batchSize: 3, currentVersion: 6, step: 6, timeoutMs: 0 });
    assert.deepEqual(
      b6.experiences.map((e) => e.id),
      ['v6-0', 'v6-1', 'v5-4'],
    );
    // v4 is out of the bound at 6: with 2 rows left in the window a batch of 3 waits, naming the sampler.
    await assert.rejects(
      fresh.sample({ batchSize: 3, currentVersion: 6, step: 7, timeoutMs: 0 }),
      (e: unknown) => e instanceof SampleTimeoutError && e.status.sampler === 'fresh' && e.status.stale === 3,
    );
    // FIFO on the same kind of buffer takes the leftovers first.
    const store2 = await openStore(join(dir, 'c.db'));
    try {
      await store2.appendExperiences(rows);
      const fifo = await makeSampler(store2, { type: 'fifo', maxStaleness: 1 }).sample({
        batchSize: 4,
        currentVersion: 5,
        timeoutMs: 0,
      });
      assert.deepEqual(
        fifo.experiences.map((e) => e.id),
        ['v4-0', 'v4-1', 'v4-2', 'v5-0'],
      );
    } finally {
      await store2.close();
    }
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('fresh in a mixed (MIX) sampler: the usual part is the freshest, the expert part as before', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-fresh-'));
  const store = await openStore(join(dir, 'b.db'));
  try {
    await store.appendExperiences([
      ...[0, 1].map((i) => makeExp(`e${i}`, { source: 'expert' })),
      ...[0, 1].map((i) => makeExp(`old${i}`, { modelVersion: 2 })),
      ...[0, 1].map((i) => makeExp(`new${i}`, { modelVersion: 3 })),
    ]);
    const mixed = makeSampler(store, {
      type: 'mixed',
      usual: 'fresh',
      expertRatio: 0.5,
      maxStaleness: 1,
      consumer: 't',
    });
    const b = await mixed.sample({ batchSize: 4, currentVersion: 3, step: 3, timeoutMs: 0 });
    assert.deepEqual(
      b.experiences.filter((e) => e.source === 'usual').map((e) => e.id),
      ['new0', 'new1'],
    );
    assert.equal(b.expertCount, 2);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the default usual sampler: fresh in async, fifo otherwise, buffer.sampler when given', () => {
  const sync = tinyConfig({ sync_offset: 0 });
  assert.equal(usualSampler(sync), 'fifo');
  assert.equal(usualSampler(tinyConfig({ sync_offset: 1 })), 'fifo');
  const asyncCfg = tinyConfig({ sync_offset: 0 }, 2, { placement: 'checkpoint', synchronizer: { schedule: 'async' } });
  assert.equal(usualSampler(asyncCfg), 'fresh');
  assert.equal(samplerConfig('mix', { expert_ratio: 0.5 }, asyncCfg).usual, 'fresh');
  assert.equal(
    usualSampler(
      tinyConfig({ sync_offset: 0 }, 2, { buffer: { storage: 'sqlite', max_staleness: 0, sampler: 'priority' } }),
    ),
    'priority',
  );
});

test("the sampler's staleness bound: what the schedule makes, within buffer.max_staleness; async: max_staleness", () => {
  const stale = (sync: Record<string, unknown>, max: number) =>
    samplerStaleness(
      tinyConfig({ sync_offset: 0 }, 2, {
        buffer: { storage: 'sqlite', max_staleness: max },
        placement: 'checkpoint',
        synchronizer: { ...sync },
      }),
    );
  // The main job's max_staleness 1 in sync: rows of the step's own version only.
  assert.equal(stale({ schedule: 'sync' }, 1), 0);
  assert.equal(
    samplerConfig(
      'mix',
      { expert_ratio: 0.5 },
      tinyConfig({ sync_offset: 0 }, 2, { buffer: { storage: 'sqlite', max_staleness: 1 } }),
    ).maxStaleness,
    0,
  );
  assert.equal(stale({ schedule: 'one_step_off' }, 3), 1);
  assert.equal(stale({ sync_offset: 1, sync_interval: 3 }, 5), 3);
  assert.equal(stale({ sync_offset: 2 }, 2), 2);
  assert.equal(stale({ schedule: 'async' }, 4), 4);
});

test("a sync (checkpoint) buffer with a re-explored step's surplus: step t trains on v(t) rows only", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-fresh-'));
  const store = await openStore(join(dir, 'b.db'));
  try {
    const cfg = tinyConfig({ sync_offset: 0 }, 2, { buffer: { storage: 'sqlite', max_staleness: 1 } });
    const sampler = makeSampler(store, { ...samplerConfig('grpo', {}, cfg), consumer: 't' });
    // Step 4 was refilled: 4 + 3 rows of v4, 4 trained; at step 5 the explorer's first round gave 3 (one sample empty).
    await store.appendExperiences([...[0, 1, 2, 3, 4, 5, 6].map((i) => makeExp(`v4-${i}`, { modelVersion: 4 }))]);
    assert.equal(
      (await sampler.sample({ batchSize: 4, currentVersion: 4, step: 4, timeoutMs: 0 })).experiences.length,
      4,
    );
    await store.appendExperiences([0, 1, 2].map((i) => makeExp(`v5-${i}`, { modelVersion: 5 })));
    // FIFO with max_staleness 1 would now take v4-4..6 + v5-0; the bound of sync waits for the refill.
    await assert.rejects(
      sampler.sample({ batchSize: 4, currentVersion: 5, step: 5, timeoutMs: 0 }),
      SampleTimeoutError,
    );
    await store.appendExperiences([3, 4, 5, 6].map((i) => makeExp(`v5-${i}`, { modelVersion: 5 })));
    const b = await sampler.sample({ batchSize: 4, currentVersion: 5, step: 5, timeoutMs: 0 });
    assert.deepEqual(
      b.experiences.map((e) => e.id),
      ['v5-0', 'v5-1', 'v5-2', 'v5-3'],
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
