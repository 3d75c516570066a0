// Samplers over real stores (SQLite, and PostgreSQL when it can start): blocking with reasons, staleness,
// mixed batch sizes, replay of a recorded step for a resumed trainer.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/registry.js';
import type { ExperienceStore } from '../../backend/buffer/storage/types.js';
import {
  expertShare,
  makeSampler,
  samplers,
  SampleTimeoutError,
  type WaitStatus,
} from '../../backend/buffer/sampler/index.js';
import { makeExp, pgSchemaUrl, startPg } from './storage-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-sampler-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const targets: { name: string; url?: () => string; skip?: string }[] = [
  { name: 'sqlite', url: () => join(dir, `s${n++}.db`) },
];
const pg = startPg();
if ('skip' in pg) targets.push({ name: 'postgres', skip: pg.skip });
else {
  after(() => pg.stop());
  targets.push({ name: 'postgres', url: () => pgSchemaUrl(pg.url) });
}

test('expertShare is ceil(ratio x B) without float noise', () => {
  assert.equal(expertShare(10, 0.3), 3);
  assert.equal(expertShare(5, 0.5), 3);
  assert.equal(expertShare(4, 0.5), 2);
  assert.equal(expertShare(7, 0), 0);
  assert.equal(expertShare(7, 1), 7);
  assert.equal(expertShare(3, 0.01), 1);
  assert.throws(() => expertShare(4, 1.5), /expertRatio/);
  assert.deepEqual(samplers.names(), ['expert', 'fifo', 'fresh', 'mixed', 'pairs', 'priority']);
});

for (const t of targets) {
  describe(`samplers on ${t.name}`, { skip: t.skip }, () => {
    const withStore = async (fn: (s: ExperienceStore) => Promise<void>) => {
      const s = await openStore(t.url!());
      try {
        await fn(s);
      } finally {
        await s.close();
      }
    };

    test('FIFO waits on an empty buffer, says why, and returns once data arrives', async () => {
      await withStore(async (s) => {
        const fifo = makeSampler(s, { type: 'fifo' });
        const waits: WaitStatus[] = [];
        await assert.rejects(
          fifo.sample({ batchSize: 2, currentVersion: 0, timeoutMs: 30, onWait: (w) => waits.push(w) }),
          (e: unknown) => {
            assert.ok(e instanceof SampleTimeoutError);
            assert.equal(e.status.reason, 'empty');
            return true;
          },
        );
        assert.equal(waits[0]!.reason, 'empty');
        const late = setTimeout(() => void s.appendExperiences([makeExp('a'), makeExp('b')]), 60);
        const b = await fifo.sample({ batchSize: 2, currentVersion: 0, timeoutMs: 5000 });
        clearTimeout(late);
        assert.deepEqual(
          b.experiences.map((e) => e.id),
          ['a', 'b'],
        );
        assert.ok(b.waitedMs > 0);
      });
    });

    test('FIFO with a staleness bound reports all_stale and not_enough, and never deletes stale rows', async () => {
      await withStore(async (s) => {
        await s.appendExperiences([makeExp('old1', { modelVersion: 1 }), makeExp('old2', { modelVersion: 2 })]);
        const fifo = makeSampler(s, { type: 'fifo', maxStaleness: 1 });
        const status = await fifo.waitStatus(1, 5);
        assert.equal(status!.reason, 'all_stale');
        assert.equal(status!.stale, 2);
        assert.equal(status!.minVersion, 4);
        assert.match(status!.message, /stale/);
        await assert.rejects(
          fifo.sample({ batchSize: 1, currentVersion: 5, timeoutMs: 0 }),
          /every available one is stale/,
        );
        await s.appendExperiences([makeExp('new1', { modelVersion: 4 })]);
        assert.equal((await fifo.waitStatus(2, 5))!.reason, 'not_enough');
        assert.equal(await fifo.waitStatus(1, 5), null);
        assert.deepEqual(
          (await fifo.sample({ batchSize: 1, currentVersion: 5, timeoutMs: 0 })).experiences.map((e) => e.id),
          ['new1'],
        );
        assert.equal(await s.count(), 3);
      });
    });

    test('mixed: ceil(ratio x B) expert first, then usual; a resumed trainer gets the recorded batch again', async () => {
      await withStore(async (s) => {
        await s.appendExperiences(
          Array.from({ length: 4 }, (_, i) => makeExp(`x${i}`, { source: 'expert', modelVersion: -1, logprobs: [] })),
        );
        await s.appendExperiences(Array.from({ length: 20 }, (_, i) => makeExp(`u${i}`)));
        const cfg = { type: 'mixed', expertRatio: 0.3, consumer: 'trainer-0' };
        const mixed = makeSampler(s, cfg);
        const b0 = await mixed.sample({ batchSize: 10, currentVersion: 0, step: 0, timeoutMs: 0 });
        assert.equal(b0.expertCount, 3);
        assert.deepEqual(
          b0.experiences.map((e) => e.source),
          [...Array(3).fill('expert'), ...Array(7).fill('usual')],
        );
        const b1 = await mixed.sample({ batchSize: 10, currentVersion: 0, step: 1, timeoutMs: 0 });
        // Expert data cycles least-used first: x3 (unused) before x0 again.
        assert.deepEqual(
          b1.experiences.slice(0, 3).map((e) => e.id),
          ['x3', 'x0', 'x1'],
        );
        // The trainer crashes after step 1 and resumes from step 0's checkpoint: a new sampler, same consumer.
        const resumed = makeSampler(s, cfg);
        const again = await resumed.sample({ batchSize: 10, currentVersion: 0, step: 1, timeoutMs: 0 });
        assert.equal(again.replayed, true);
        assert.deepEqual(
          again.experiences.map((e) => e.id),
          b1.experiences.map((e) => e.id),
        );
        assert.deepEqual(
          await s.consumed('trainer-0', 1),
          [...b1.experiences.slice(0, 3), ...b1.experiences.slice(3)].map((e) => e.id),
        );
        // Only 6 usual left: a third batch of 7 usual waits (the expert part is recorded and reused on retry).
        await assert.rejects(mixed.sample({ batchSize: 10, currentVersion: 0, step: 2, timeoutMs: 0 }), /6 ready/);
      });
    });

    test('mixed: an expert share larger than the expert set cycles through it (6 demonstrations, 8 expert rows a step), replayed whole', async () => {
      await withStore(async (s) => {
        await s.appendExperiences(
          Array.from({ length: 6 }, (_, i) => makeExp(`d${i}`, { source: 'expert', modelVersion: -1, logprobs: [] })),
        );
        await s.appendExperiences(Array.from({ length: 24 }, (_, i) => makeExp(`u${i}`)));
        const cfg = { type: 'mixed', expertRatio: 0.5, consumer: 'trainer' };
        const mixed = makeSampler(s, cfg);
        // Before: the expert part waited for 8 distinct rows of 6 and the step timed out.
        const b0 = await mixed.sample({ batchSize: 16, currentVersion: 0, step: 0, timeoutMs: 0 });
        const ids = (b: typeof b0) => b.experiences.slice(0, b.expertCount).map((e) => e.id);
        assert.equal(b0.expertCount, 8);
        // One whole pass over the set, then the least-used again (an epoch and a third).
        assert.deepEqual(ids(b0), ['d0', 'd1', 'd2', 'd3', 'd4', 'd5', 'd0', 'd1']);
        assert.deepEqual(
          b0.experiences.slice(8).map((e) => e.source),
          Array(8).fill('usual'),
        );
        const b1 = await mixed.sample({ batchSize: 16, currentVersion: 0, step: 1, timeoutMs: 0 });
        assert.deepEqual(ids(b1), ['d2', 'd3', 'd4', 'd5', 'd0', 'd1', 'd2', 'd3']);
        // Every demonstration used as evenly as cycling allows: 16 uses over 6 rows.
        const uses = (await s.list({ source: 'expert' })).map((e) => e.useCount).sort();
        assert.deepEqual(uses, [2, 2, 3, 3, 3, 3]);
        // A resumed trainer gets step 1 back, repeats included, in the same order.
        const again = await makeSampler(s, cfg).sample({ batchSize: 16, currentVersion: 0, step: 1, timeoutMs: 0 });
        assert.equal(again.replayed, true);
        assert.deepEqual(
          again.experiences.map((e) => e.id),
          b1.experiences.map((e) => e.id),
        );
        // An expert sampler alone (SFT) fills any batch from one row.
        await s.appendExperiences([makeExp('solo', { source: 'expert', modelVersion: -1, logprobs: [], runId: 'R' })]);
        const sft = makeSampler(s, { type: 'expert', runId: 'R' });
        const one = await sft.sample({ batchSize: 3, currentVersion: 0, timeoutMs: 0 });
        assert.deepEqual(
          one.experiences.map((e) => e.id),
          ['solo', 'solo', 'solo'],
        );
      });
    });

    test('priority sampler reuses experiences up to maxUses, best first', async () => {
      await withStore(async (s) => {
        await s.appendExperiences([makeExp('p1', { metadata: { priority: 5 } }), makeExp('p2')]);
        const pr = makeSampler(s, { type: 'priority', maxUses: 2, useDecay: 0.1 });
        const got: string[] = [];
        for (let i = 0; i < 4; i++)
          got.push(
            ...(await pr.sample({ batchSize: 1, currentVersion: 0, timeoutMs: 0 })).experiences.map((e) => e.id),
          );
        assert.deepEqual(got, ['p1', 'p2', 'p1', 'p2']); // 5 -> 0.5 after one use, below p2's 1
        const st = await pr.waitStatus(1, 0);
        assert.equal(st!.reason, 'empty');
        assert.throws(() => makeSampler(s, { type: 'priority', useDecay: 2 }), /useDecay/);
        assert.throws(() => makeSampler(s, { type: 'nope' }), /unknown sampler 'nope'/);
      });
    });
  });
}
