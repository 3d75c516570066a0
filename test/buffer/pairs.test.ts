// Preference pairs: the store's pairs table (SQLite and PostgreSQL), pairs derived from curation
// through the feedback service (promote / reject / rate / undo), from long2short marks, and the pair sampler.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Experience } from '../../backend/core/types.js';
import { openStore, type ExperienceStore } from '../../backend/buffer/storage/index.js';
import { FeedbackService } from '../../backend/buffer/feedback.js';
import { derivePairs, pairId, syncPairs } from '../../backend/buffer/pairs.js';
import { makeSampler } from '../../backend/buffer/sampler/registry.js';
import { SampleTimeoutError } from '../../backend/buffer/sampler/types.js';
import { ExperiencePipeline } from '../../backend/buffer/pipeline/experience/index.js';
import { stageBatchSize } from '../../backend/coordinator/setup/trainer.js';
import { checkRunConfig } from '../../backend/coordinator/config-check.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { makeExp, pgSchemaUrl, startPg } from './storage-helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'rft-pairs-'));
after(() => rmSync(tmp, { recursive: true, force: true }));
let k = 0;

/** Experiences of one task share the prompt (same tokens); `len` generated tokens. */
function ex(id: string, task: string, over: Partial<Experience> = {}, len = 6): Experience {
  const base = makeExp(id, { runId: 'run-1', taskId: task, groupId: `g-${task}` });
  const p = makeExp(`prompt-${task}`);
  const resp = base.responseTokens.slice(0, len);
  return {
    ...base,
    promptTokens: p.promptTokens,
    promptText: p.promptText,
    responseTokens: resp,
    actionMask: resp.map(() => 1),
    logprobs: base.logprobs.slice(0, len),
    createdAt: 1000 + k++,
    ...over,
  };
}

function suite(kind: string, freshUrl: () => string) {
  describe(`pairs: ${kind}`, () => {
    let s: ExperienceStore;
    const open = async () => (s = await openStore(freshUrl()));
    const close = () => s.close();

    test('schema 3; replace keeps surviving pairs and their use counts; take least-used first, all or nothing', async () => {
      await open();
      try {
        assert.equal(await s.schemaVersion(), 3);
        const p = (c: string, r: string, at: number) => ({
          id: pairId('curation', c, r),
          runId: 'run-1',
          taskId: 't',
          chosenId: c,
          rejectedId: r,
          origin: 'curation' as const,
          createdAt: at,
        });
        assert.equal(await s.replacePairs('run-1', ['curation'], [p('a', 'b', 1), p('a', 'c', 2), p('d', 'c', 3)]), 3);
        const t1 = await s.takePairs({ n: 2, runId: 'run-1' });
        assert.deepEqual(
          t1.map((x) => [x.chosenId, x.rejectedId, x.useCount]),
          [
            ['a', 'b', 1],
            ['a', 'c', 1],
          ],
        );
        assert.deepEqual(
          (await s.takePairs({ n: 2, runId: 'run-1' })).map((x) => x.id),
          [p('d', 'c', 3).id, p('a', 'b', 1).id],
          'the unused one first',
        );
        assert.deepEqual(await s.takePairs({ n: 4, runId: 'run-1' }), [], 'fewer than n: nothing');
        assert.deepEqual(await s.takePairs({ n: 1, runId: 'other' }), [], 'runs apart');
        // (a,b) survives with its 2 uses, (a,c) and (d,c) go, (e,b) comes; another origin is untouched.
        await s.replacePairs(
          'run-1',
          ['rating'],
          [{ ...p('x', 'y', 9), id: pairId('rating', 'x', 'y'), origin: 'rating' }],
        );
        assert.equal(await s.replacePairs('run-1', ['curation'], [p('a', 'b', 1), p('e', 'b', 4)]), 2);
        assert.deepEqual(
          (await s.listPairs({ runId: 'run-1' })).map((x) => [x.id, x.useCount]),
          [
            [p('a', 'b', 1).id, 2],
            [p('e', 'b', 4).id, 0],
            [pairId('rating', 'x', 'y'), 0],
          ],
        );
        assert.deepEqual(
          (await s.listPairs({ origin: 'rating' })).map((x) => x.chosenId),
          ['x'],
        );
        assert.deepEqual(
          (await s.takePairs({ n: 1, runId: 'run-1', maxUses: 1 })).map((x) => x.chosenId),
          ['e'],
        );
        assert.deepEqual(await s.takePairs({ n: 2, runId: 'run-1', maxUses: 1 }), [], 'maxUses: the rest are used up');
        await assert.rejects(
          s.replacePairs('run-1', ['curation'], [p('a', 'b', 1), p('a', 'a', 1)]),
          /pairs\[1\]: chosen and rejected are the same experience 'a'/,
        );
        assert.equal(
          (await s.listPairs({ runId: 'run-1', origin: 'curation' })).length,
          2,
          'a refused replace changes nothing',
        );
      } finally {
        await close();
      }
    });

    test('curation in the store: promoted vs rejected and higher vs lower rating of the same task; undo removes the pair', async () => {
      await open();
      try {
        const [a, b, c, x, ev] = [
          ex('a', 'T'),
          ex('b', 'T'),
          ex('c', 'T'),
          ex('x', 'U'),
          ex('ev', 'T', { split: 'eval' }),
        ];
        await s.appendExperiences([a, b, c, x, ev]);
        const fb = new FeedbackService(s, () => 5000);
        const { expert } = await fb.promote('a', 'ann');
        const rej = await fb.reject('b', 'ann');
        await fb.reject('x', 'ann'); // another task: never paired with T's responses
        await fb.reject('ev', 'ann'); // eval split: never trained on
        await fb.rate('c', 5, 'bob');
        await fb.rate('a', 2, 'bob');
        await fb.rate('x', 1, 'bob'); // rejected and another task
        const counts = await syncPairs(s, 'run-1');
        assert.deepEqual(counts, { curation: 1, rating: 1, long2short: 0 });
        const pairs = await s.listPairs({ runId: 'run-1' });
        assert.deepEqual(pairs.map((p) => [p.origin, p.chosenId, p.rejectedId, p.taskId]).sort(), [
          ['curation', expert.id, 'b', 'T'],
          ['rating', 'c', 'a', 'T'],
        ]);
        await fb.undo(rej, 'ann');
        assert.deepEqual(await syncPairs(s, 'run-1'), { curation: 0, rating: 1, long2short: 0 });
        assert.deepEqual(
          (await s.listPairs({ runId: 'run-1' })).map((p) => p.origin),
          ['rating'],
        );
      } finally {
        await close();
      }
    });

    test('long2short marks from the experience pipeline become stored pairs; the pair sampler lays them out chosen, rejected', async () => {
      await open();
      try {
        // group of task L: lengths 9 (right), 4 (right: chosen), 7 (wrong)
        const g = [ex('l0', 'L', { reward: 1 }, 9), ex('l1', 'L', { reward: 1 }, 4), ex('l2', 'L', { reward: 0 }, 7)];
        const r = ExperiencePipeline.fromConfig([{ name: 'validity' }, { name: 'long2short' }]).run(g);
        await s.appendExperiences(r.experiences);
        assert.deepEqual(await syncPairs(s, 'run-1'), { curation: 0, rating: 0, long2short: 2 });
        const expert = await s.get('l1~shortest');
        assert.equal(expert?.source, 'expert');
        assert.equal(expert?.metadata?.origin, 'shortest_rejection');
        const sampler = makeSampler(s, { type: 'pairs', runId: 'run-1' });
        const batch = await sampler.sample({ batchSize: 4, currentVersion: 0, timeoutMs: 0 });
        assert.deepEqual(
          batch.experiences.map((e) => e.id),
          ['l1', 'l0', 'l1', 'l2'],
        );
        await assert.rejects(sampler.sample({ batchSize: 3, currentVersion: 0 }), /even number of rows/);
        // Recorded per (consumer, step): a resumed trainer gets the same pairs for a step it had taken.
        const rec = makeSampler(s, { type: 'pairs', runId: 'run-1', consumer: 'trainer' });
        const b0 = await rec.sample({ batchSize: 2, currentVersion: 0, step: 0, timeoutMs: 0 });
        const again = await rec.sample({ batchSize: 2, currentVersion: 0, step: 0, timeoutMs: 0 });
        assert.deepEqual([again.replayed, again.experiences.map((e) => e.id)], [true, b0.experiences.map((e) => e.id)]);
        const b1 = await rec.sample({ batchSize: 2, currentVersion: 0, step: 1, timeoutMs: 0 });
        assert.equal(b1.replayed, false);
        assert.notDeepEqual(
          b1.experiences.map((e) => e.id),
          b0.experiences.map((e) => e.id),
          'the least-used pair next',
        );
        await assert.rejects(
          sampler.sample({ batchSize: 6, currentVersion: 0, timeoutMs: 0 }),
          (e: unknown) => e instanceof SampleTimeoutError && /waiting for 3 preference pairs: 2 ready/.test(e.message),
        );
      } finally {
        await close();
      }
    });
  });
}

test('a DPO stage takes the configured batch of whole pairs; an odd batch_size is refused', async () => {
  const store = { count: async () => 0 };
  assert.equal(await stageBatchSize(store, { type: 'pairs' }, true, 8, 13), 8);
  await assert.rejects(stageBatchSize(store, { type: 'pairs' }, false, 7, 0), /batch_size must be even, got 7/);
});

test('buffer.sampler: pairs is refused at its path (dpo stages take it by themselves)', () => {
  const { config } = validateRunConfig({
    taskset: { builtin: 'reverse' },
    workflow: { name: 'single_turn', reward: 'exact_match' },
    buffer: { sampler: 'pairs' },
  });
  assert.deepEqual(
    checkRunConfig(config!)
      .filter((i) => i.path === 'buffer.sampler')
      .map((i) => i.message),
    ["'pairs' is taken by dpo stages by themselves; buffer.sampler reads rollouts (fifo, fresh or priority)"],
  );
});

test('derivePairs: different prompt tokens under one task id are never paired', () => {
  const a = ex('pa', 'P', { metadata: { promotedFrom: 'zz' }, source: 'expert' });
  const b = ex('pb', 'P', { feedback: { rejected: true }, promptTokens: [9, 9, 9] });
  const c = ex('pc', 'P', { feedback: { rejected: true } });
  assert.deepEqual(
    derivePairs('run-1', [a, b, c]).map((p) => p.rejectedId),
    ['pc'],
  );
});

suite('sqlite', () => join(tmp, `b${k++}.db`));
const pg = startPg();
if ('skip' in pg) describe('pairs: postgres', () => test('PostgreSQL unavailable', { skip: pg.skip }, () => undefined));
else {
  after(() => pg.stop());
  suite('postgres', () => pgSchemaUrl(pg.url));
}
