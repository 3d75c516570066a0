// Partial rollouts in the buffer, on SQLite and PostgreSQL: a partial row (tokens, behaviour
// log-probs, segments with their versions, the task) round-trips exactly; no sampling read (fifo,
// priority, cycle, availability; the pair derivation) ever takes it; a continued / finished
// trajectory replaces it in the same transaction as the append, and a replace of a row that is not
// partial any more fails whole (nothing written).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/index.js';
import { ConflictError } from '../../backend/core/errors.js';
import type { ExperienceStore } from '../../backend/buffer/storage/types.js';
import { pendingPartials } from '../../backend/buffer/partials.js';
import { derivePairs } from '../../backend/buffer/pairs.js';
import { makeSampler } from '../../backend/buffer/sampler/index.js';
import type { Experience } from '../../backend/core/types.js';
import { makeExp, pgSchemaUrl, startPg } from './storage-helpers.js';

const RUN = 'run-1';

function partialRow(id: string, group: string): Experience {
  const e = makeExp(id, { groupId: group, runId: RUN, split: 'train' });
  return {
    ...e,
    status: 'partial',
    reward: 0,
    statusReason: 'partial rollout: 120 tokens so far',
    segments: [
      { version: 3, start: 0, end: 50, step: 3 },
      { version: 4, start: 50, end: 120, step: 4 },
    ],
    modelVersion: 4,
    metadata: {
      partial: { finished: false, task: { id: e.taskId, taskset: 'x', domain: 'text', prompt: 'p', answer: 'a' } },
    },
  };
}

function suite(kind: string, fresh: () => string): void {
  describe(`partial rows: ${kind}`, () => {
    let store: ExperienceStore;
    const open = async () => (store = await openStore(fresh()));

    test('round trip: tokens, log-probs, segments and task come back exactly', async () => {
      await open();
      const p = partialRow('p1', 'g1');
      await store.appendExperiences([p, makeExp('ok1', { runId: RUN, modelVersion: 4 })]);
      const got = await store.get('p1');
      assert.deepEqual(got, { ...p, useCount: 0 });
      const pend = await pendingPartials(store, RUN);
      assert.deepEqual(
        pend.map((e) => e.id),
        ['p1'],
      );
      assert.deepEqual(await pendingPartials(store, 'other-run'), []);
      await store.close();
    });

    test('no sampling read takes a partial row', async () => {
      await open();
      // Only partial rows of usual source at the newest version, plus one expert row.
      await store.appendExperiences([
        partialRow('p1', 'g1'),
        partialRow('p2', 'g1'),
        makeExp('x1', { runId: RUN, source: 'expert', modelVersion: -1 }),
      ]);
      assert.deepEqual((await store.takeFifo({ n: 1, source: 'usual', runId: RUN })).experiences, []);
      assert.deepEqual(
        (await store.takePriority({ n: 1, source: 'usual', runId: RUN, maxUses: 9, useDecay: 1, halfLifeMs: 1e9 }))
          .experiences,
        [],
      );
      assert.deepEqual((await store.takeCycle({ n: 1, source: 'usual', runId: RUN })).experiences, []);
      for (const k of ['fifo', 'priority', 'cycle'] as const)
        assert.equal((await store.availability(k, { source: 'usual', runId: RUN })).ready, 0, k);
      // Every registered usual sampler (and the mixed one) sees nothing to take: a short wait times out.
      for (const type of ['fifo', 'priority']) {
        const s = makeSampler(store, { type, consumer: `c-${type}`, runId: RUN });
        await assert.rejects(s.sample({ batchSize: 1, currentVersion: 4, timeoutMs: 50 }), /timed out/, type);
      }
      const mixed = makeSampler(store, {
        type: 'mixed',
        expertRatio: 0.5,
        usual: 'fifo',
        consumer: 'c-mixed',
        runId: RUN,
      });
      await assert.rejects(mixed.sample({ batchSize: 2, currentVersion: 4, timeoutMs: 50 }), /timed out/);
      // Preference pairs are derived from ok rows only: a partial with a long2short mark makes none.
      const marked = { ...partialRow('p3', 'g1'), metadata: { long2short: { chosen: 'x1' } } };
      assert.deepEqual(derivePairs(RUN, [marked, (await store.get('x1'))!]), []);
      assert.equal((await store.get('p1'))!.useCount, 0);
      await store.close();
    });

    test('continued and finished trajectories replace their partial rows in one transaction', async () => {
      await open();
      await store.appendExperiences([partialRow('p1', 'g1'), partialRow('p2', 'g1')]);
      const longer = { ...partialRow('p1', 'g1') };
      const done: Experience = {
        ...partialRow('p2', 'g1'),
        status: 'ok',
        reward: 1,
        statusReason: undefined,
        metadata: undefined,
      };
      delete done.statusReason;
      delete done.metadata;
      const r = await store.appendExperiences([longer, done, makeExp('n1', { runId: RUN })], {
        replacing: ['p1', 'p2'],
      });
      assert.deepEqual(r, { inserted: 3, duplicates: [] });
      assert.equal((await store.get('p2'))!.status, 'ok');
      assert.deepEqual(
        (await pendingPartials(store, RUN)).map((e) => e.id),
        ['p1'],
      );
      // Now trainable: the finished one is taken (once), the partial one is not.
      const t = await store.takeFifo({ n: 2, source: 'usual', runId: RUN });
      assert.deepEqual(t.experiences.map((e) => e.id).sort(), ['n1', 'p2']);
      // p2 is no longer partial: replacing it fails whole, and p1 and the new row are left as they were.
      await assert.rejects(
        store.appendExperiences([makeExp('n2', { runId: RUN })], { replacing: ['p1', 'p2'] }),
        (e: unknown) => e instanceof ConflictError,
      );
      assert.equal(await store.get('n2'), null);
      assert.equal((await store.get('p1'))!.status, 'partial');
      // Segments are checked: they must cover the response in order.
      await assert.rejects(
        store.appendExperiences([{ ...partialRow('bad', 'g2'), segments: [{ version: 1, start: 0, end: 60 }] }]),
        /segments'?: cover 60 tokens, the response has 120/,
      );
      await assert.rejects(
        store.appendExperiences([
          {
            ...partialRow('bad', 'g2'),
            segments: [
              { version: 1, start: 0, end: 60 },
              { version: 2, start: 61, end: 120 },
            ],
          },
        ]),
        /segments\[1\]\.start/,
      );
      await store.close();
    });
  });
}

const dir = mkdtempSync(join(tmpdir(), 'rft-partial-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
suite('sqlite', () => join(dir, `b${n++}`, 'buffer.db'));

const pg = startPg();
if ('skip' in pg) {
  describe('partial rows: postgres', () => {
    test('PostgreSQL unavailable', { skip: pg.skip }, () => undefined);
  });
} else {
  after(() => pg.stop());
  suite('postgres', () => pgSchemaUrl(pg.url));
}
