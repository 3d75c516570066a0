// Human feedback over real stores (SQLite, and PostgreSQL when it can start): each change is logged and undoable.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../../backend/buffer/storage/registry.js';
import { ConflictError } from '../../backend/core/errors.js';
import type { ExperienceStore } from '../../backend/buffer/storage/types.js';
import { FeedbackService } from '../../backend/buffer/feedback.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';
import { makeExp, pgSchemaUrl, startPg } from './storage-helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'rft-feedback-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
const targets: { name: string; url?: () => string; skip?: string }[] = [
  { name: 'sqlite', url: () => join(dir, `f${n++}.db`) },
];
const pg = startPg();
if ('skip' in pg) targets.push({ name: 'postgres', skip: pg.skip });
else {
  after(() => pg.stop());
  targets.push({ name: 'postgres', url: () => pgSchemaUrl(pg.url) });
}
const tok = new ByteTestTokenizer();
const tokenize = (t: string) => tok.encode(t);

for (const t of targets) {
  describe(`feedback on ${t.name}`, { skip: t.skip }, () => {
    const withFb = async (fn: (s: ExperienceStore, fb: FeedbackService) => Promise<void>) => {
      const s = await openStore(t.url!());
      let clock = 1000;
      try {
        await s.appendExperiences([
          makeExp('u1', { reward: 0.25 }),
          makeExp('u2'),
          makeExp('bad', { status: 'invalid', statusReason: 'no answer' }),
        ]);
        await fn(s, new FeedbackService(s, () => clock++));
      } finally {
        await s.close();
      }
    };

    test('rate and reject are logged with who/when/what; undo reverts exactly that change', async () => {
      await withFb(async (s, fb) => {
        const l1 = await fb.rate('u1', 4, 'ann', 'good');
        assert.deepEqual((await s.get('u1'))!.feedback, { rating: 4, note: 'good', by: 'ann', at: 1000 });
        const l2 = await fb.reject('u2', 'bob');
        assert.equal((await s.get('u2'))!.feedback!.rejected, true);
        assert.equal(
          (await s.takeFifo({ n: 2, source: 'usual' })).experiences.length,
          0,
          'rejected u2 is not sampled; only u1 is left',
        );
        const log = await s.feedbackLog();
        assert.deepEqual(
          log.map((e) => [e.id, e.action, e.who, e.experienceId]),
          [
            [l2, 'reject', 'bob', 'u2'],
            [l1, 'rate', 'ann', 'u1'],
          ],
        );
        assert.equal(log[1]!.at, 1000);
        const u = await fb.undo(l2, 'bob');
        assert.equal((await s.get('u2'))!.feedback, undefined);
        assert.equal((await s.feedbackEntry(l2))!.undoneBy, u);
        assert.equal((await s.feedbackEntry(u))!.undoes, l2);
        assert.equal(
          (await s.takeFifo({ n: 2, source: 'usual' })).experiences.length,
          2,
          'sampled again after the undo',
        );
        await assert.rejects(fb.undo(l2, 'bob'), ConflictError);
        // Undo of the undo re-applies the rejection.
        await fb.undo(u, 'ann');
        assert.equal((await s.get('u2'))!.feedback!.rejected, true);
        // Rate twice, then undo the first: refused, the second change would be lost.
        const r1 = await fb.rate('u1', 5, 'ann');
        await fb.rate('u1', 2, 'cy');
        await assert.rejects(fb.undo(r1, 'ann'), /changed since/);
        assert.equal((await s.get('u1'))!.feedback!.rating, 2);
        assert.equal((await fb.history('u1')).length, 3);
        await assert.rejects(fb.rate('nope', 1, 'ann'), /no experience 'nope'/);
      });
    });

    test('a partial row (partial rollouts: not an experience yet) is refused by rate, reject, unreject and promote; nothing changes', async () => {
      await withFb(async (s, fb) => {
        const base = makeExp('p1', { status: 'partial', reward: 0 });
        const responseTokens = base.responseTokens.slice(0, 6);
        await s.appendExperiences([
          {
            ...base,
            responseTokens,
            actionMask: responseTokens.map(() => 1),
            logprobs: base.logprobs.slice(0, 6),
            segments: [{ version: 0, start: 0, end: 6, step: 0 }],
            metadata: { partial: { finished: false } },
          },
        ]);
        const before = await s.get('p1');
        const why = (verb: string) => new RegExp(`experience 'p1' is a partial row .*cannot be ${verb}`);
        await assert.rejects(
          fb.rate('p1', 3, 'ann'),
          (e: Error) => e instanceof ConflictError && why('rated').test(e.message),
        );
        await assert.rejects(fb.reject('p1', 'ann'), why('rejected'));
        await assert.rejects(fb.unreject('p1', 'ann'), why('unrejected'));
        await assert.rejects(fb.promote('p1', 'ann'), why('promoted'));
        await assert.rejects(fb.promote('p1', 'ann', { editedResponse: 'x', tokenize }), why('promoted'));
        assert.deepEqual(await s.get('p1'), before, 'the row is as it was');
        assert.deepEqual(await s.feedbackLog(), [], 'nothing logged');
        assert.equal(await s.count({ source: 'expert' }), 0, 'no expert copy');
      });
    });

    test('promote with an edited response creates a new expert experience and leaves the original intact', async () => {
      await withFb(async (s, fb) => {
        const orig = await s.get('u1');
        const { logId, expert } = await fb.promote('u1', 'ann', { editedResponse: 'The answer is 7.', tokenize });
        assert.deepEqual(await s.get('u1'), orig, 'original untouched');
        const stored = (await s.get(expert.id))!;
        assert.equal(stored.source, 'expert');
        assert.equal(stored.feedback!.editedFrom, 'u1');
        assert.deepEqual(stored.responseTokens, tokenize('The answer is 7.'));
        assert.equal(stored.responseText, 'The answer is 7.');
        assert.deepEqual(
          stored.actionMask,
          stored.responseTokens.map(() => 1),
        );
        assert.deepEqual(stored.logprobs, []);
        assert.equal(stored.modelVersion, -1);
        assert.deepEqual(stored.promptTokens, orig!.promptTokens);
        assert.equal((await s.takeCycle({ n: 1, source: 'expert' })).experiences[0]!.id, expert.id);
        // Undo deletes the created expert (used once since: use counts do not block the undo).
        await fb.undo(logId, 'ann');
        assert.equal(await s.get(expert.id), null);
        assert.equal(await s.count({ source: 'expert' }), 0);
        // An invalid experience can be promoted only with an edit.
        await assert.rejects(fb.promote('bad', 'ann'), /edited response/);
        const fixed = await fb.promote('bad', 'ann', { editedResponse: 'fixed', tokenize, reward: 0.9 });
        assert.equal(fixed.expert.status, 'ok');
        assert.equal(fixed.expert.reward, 0.9);
        await assert.rejects(fb.promote(fixed.expert.id, 'ann'), /already an expert/);
      });
    });

    test('plain promote copies the experience; a hand-written expert example is tokenised and undoable', async () => {
      await withFb(async (s, fb) => {
        const { expert } = await fb.promote('u1', 'ann');
        const orig = (await s.get('u1'))!;
        assert.deepEqual(
          [expert.logprobs, expert.modelVersion, expert.reward, expert.metadata!.promotedFrom],
          [orig.logprobs, orig.modelVersion, 0.25, 'u1'],
        );
        const added = await fb.addExpert(
          { runId: 'run-1', taskId: 'task-x', prompt: 'Say hi', response: 'hi' },
          tokenize,
          'cy',
        );
        const got = (await s.get(added.expert.id))!;
        assert.deepEqual(got.promptTokens, tokenize('Say hi'));
        assert.deepEqual(got.responseTokens, tokenize('hi'));
        assert.deepEqual([got.source, got.modelVersion, got.logprobs.length, got.status], ['expert', -1, 0, 'ok']);
        assert.equal(await s.count({ source: 'expert' }), 2);
        const u = await fb.undo(added.logId, 'cy');
        assert.equal(await s.get(added.expert.id), null);
        await fb.undo(u, 'cy');
        assert.deepEqual(await s.get(added.expert.id), got, 're-inserted exactly by undoing the undo');
      });
    });
  });
}
