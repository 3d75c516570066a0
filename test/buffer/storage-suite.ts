// The one behaviour suite every ExperienceStore must pass; run for SQLite and PostgreSQL.
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Experience } from '../../backend/core/types.js';
import { ConflictError } from '../../backend/core/errors.js';
import type { ExperienceStore } from '../../backend/buffer/storage/types.js';
import { openStore } from '../../backend/buffer/storage/registry.js';
import { makeExp, writeSchema1Buffer } from './storage-helpers.js';

const child = join(dirname(fileURLToPath(import.meta.url)), 'storage-child.ts');

export interface StoreTarget {
  /** A URL for a new, empty buffer (every call gives a fresh one). */
  freshUrl(): string;
  skip?: string;
}

async function withStore(t: StoreTarget, fn: (s: ExperienceStore, url: string) => Promise<void>): Promise<void> {
  const url = t.freshUrl();
  const s = await openStore(url);
  try {
    await fn(s, url);
  } finally {
    await s.close();
  }
}

function ids(xs: Experience[]): string[] {
  return xs.map((e) => e.id);
}

export function storageSuite(name: string, target: () => StoreTarget): void {
  describe(`storage: ${name}`, () => {
    const t = () => target();

    test('append + get round-trips every field exactly', async () => {
      await withStore(t(), async (s) => {
        const a = makeExp('a', {
          logprobs: makeExp('a').logprobs.map((x, i) => (i === 0 ? -0.1 : x)), // not float32-exact: stored as float64
          advantages: Array.from({ length: 120 }, (_, i) => i / 7),
          returns: Array.from({ length: 120 }, () => 0.5),
          rewardDetails: { correct: true, format: 0.5, note: 'x' },
          statusReason: 'fine',
          feedback: { rating: 4, by: 'ann', at: 5 },
          split: 'train',
          metadata: { nested: { k: [1, 2] } },
          useCount: 2,
        });
        const b = makeExp('b', { source: 'expert', modelVersion: -1, logprobs: [] });
        const r = await s.appendExperiences([a, b]);
        assert.deepEqual(r, { inserted: 2, duplicates: [] });
        assert.deepEqual(await s.get('a'), a);
        assert.deepEqual(await s.get('b'), b);
        assert.equal(await s.get('nope'), null);
        assert.deepEqual(ids(await s.getMany(['b', 'x', 'a'])), ['b', 'a']);
        const again = await s.appendExperiences([makeExp('a', { reward: 9 }), makeExp('c')]);
        assert.deepEqual(again, { inserted: 1, duplicates: ['a'] });
        assert.equal((await s.get('a'))!.reward, 1, 'a duplicate id never overwrites');
        assert.equal(await s.schemaVersion(), 3);
      });
    });

    test('a sampled NUL character is stored: the tokens exactly, the text readable on every backend', async () => {
      await withStore(t(), async (s) => {
        const e = makeExp('nul', { responseText: 'a\u0000b', promptText: '\u0000' });
        assert.deepEqual(await s.appendExperiences([e]), { inserted: 1, duplicates: [] });
        const got = (await s.get('nul'))!;
        assert.deepEqual(got.responseTokens, e.responseTokens);
        assert.deepEqual(got.logprobs, e.logprobs);
        // SQLite keeps U+0000; PostgreSQL text cannot hold it and gets U+FFFD.
        assert.ok(['a\u0000b', 'a\uFFFDb'].includes(got.responseText), JSON.stringify(got.responseText));
      });
    });

    test('a batch with one bad experience is rejected whole, naming the field', async () => {
      await withStore(t(), async (s) => {
        const bad = makeExp('bad', { actionMask: [1, 0] });
        await assert.rejects(s.appendExperiences([makeExp('ok1'), bad]), /batch\[1\]\.actionMask/);
        const noLogprobs = makeExp('nolp', { logprobs: [] }); // model data without log-probs
        await assert.rejects(s.appendExperiences([noLogprobs]), /batch\[0\]\.logprobs/);
        assert.equal(await s.count(), 0);
      });
    });

    test('list filters, sorts, pages and counts; group and scan', async () => {
      await withStore(t(), async (s) => {
        const exps = Array.from({ length: 12 }, (_, i) =>
          makeExp(`e${String(i).padStart(2, '0')}`, {
            reward: i / 10,
            modelVersion: i % 3,
            groupId: `g${i % 2}`,
            taskId: `t${i % 4}`,
            status: i === 5 ? 'infra_failure' : i === 6 ? 'invalid' : 'ok',
            source: i >= 10 ? 'expert' : 'usual',
            responseText: i === 7 ? 'Needle_IN haystack' : 'plain',
            runId: i < 6 ? 'r1' : 'r2',
            createdAt: 1000 + i,
          }),
        );
        await s.appendExperiences(exps);
        assert.equal(await s.count(), 12);
        assert.equal(await s.count({ source: 'expert' }), 2);
        assert.equal(await s.count({ status: 'infra_failure' }), 1);
        assert.equal(await s.count({ runId: 'r1' }), 6);
        assert.deepEqual(ids(await s.list({ minReward: 0.3, maxReward: 0.5 })), ['e03', 'e04', 'e05']);
        assert.deepEqual(ids(await s.list({ text: 'needle_in' })), ['e07']);
        assert.deepEqual(ids(await s.list({ text: '%' })), [], 'LIKE wildcards in the search text are literal');
        assert.deepEqual(ids(await s.list({ minVersion: 2, maxVersion: 2 })), ['e02', 'e05', 'e08', 'e11']);
        assert.deepEqual(ids(await s.list({ sort: 'reward', desc: true, limit: 3 })), ['e11', 'e10', 'e09']);
        assert.deepEqual(ids(await s.list({ sort: 'createdAt', offset: 10, limit: 5 })), ['e10', 'e11']);
        assert.deepEqual(ids(await s.list({ taskId: 't1', source: 'usual' })), ['e01', 'e05', 'e09']);
        assert.equal((await s.group('g1')).length, 6);
        const page1 = await s.scan(0, 5);
        const page2 = await s.scan(page1.at(-1)!.seq, 100);
        assert.deepEqual(
          [...page1, ...page2].map((r) => r.experience.id),
          ids(exps),
        );
        const st = await s.stats();
        assert.equal(st.total, 12);
        assert.deepEqual(st.bySource, { usual: 10, expert: 2 });
        assert.deepEqual(st.byStatus, { ok: 10, infra_failure: 1, invalid: 1 });
        assert.equal(st.minVersion, 0);
        assert.equal(st.maxVersion, 2);
        assert.ok(Math.abs(st.meanReward! - 0.55) < 1e-9);
        assert.equal((await s.stats('r1')).total, 6);
      });
    });

    test('FIFO: oldest first, each row once, staleness bound counts and skips old rows, all-or-nothing', async () => {
      await withStore(t(), async (s) => {
        await s.appendExperiences([
          makeExp('v0a', { modelVersion: 0 }),
          makeExp('v0b', { modelVersion: 0 }),
          makeExp('v1a', { modelVersion: 1 }),
          makeExp('bad', { modelVersion: 2, status: 'invalid' }),
          makeExp('inf', { modelVersion: 2, status: 'infra_failure' }),
          makeExp('evl', { modelVersion: 2, split: 'eval' }),
          makeExp('exp', { modelVersion: 2, source: 'expert' }),
          makeExp('v2a', { modelVersion: 2 }),
          makeExp('v2b', { modelVersion: 2 }),
        ]);
        assert.deepEqual(await s.availability('fifo', { source: 'usual', minVersion: 1 }), { ready: 3, stale: 2 });
        const r1 = await s.takeFifo({ n: 2, source: 'usual', minVersion: 1 });
        assert.deepEqual(ids(r1.experiences), ['v1a', 'v2a']);
        assert.deepEqual(
          r1.experiences.map((e) => e.useCount),
          [1, 1],
        );
        assert.deepEqual(
          ids((await s.takeFifo({ n: 2, source: 'usual', minVersion: 1 })).experiences),
          [],
          'only 1 left: nothing taken',
        );
        assert.equal((await s.get('v2b'))!.useCount, 0, 'a failed take marks nothing');
        assert.deepEqual(ids((await s.takeFifo({ n: 1, source: 'usual', minVersion: 1 })).experiences), ['v2b']);
        // Stale rows are still there, and a looser bound takes them.
        assert.equal(await s.count(), 9);
        assert.deepEqual(ids((await s.takeFifo({ n: 2, source: 'usual', minVersion: 0 })).experiences), ['v0a', 'v0b']);
        assert.deepEqual(await s.availability('fifo', { source: 'usual', minVersion: 0 }), { ready: 0, stale: 0 });
        // Never sampled: invalid, infra_failure, eval split.
        for (const id of ['bad', 'inf', 'evl']) assert.equal((await s.get(id))!.useCount, 0);
        await assert.rejects(s.takeFifo({ n: 0, source: 'usual' }), /positive integer/);
      });
    });

    test('consumption is recorded: the same (consumer, step) returns the same batch again', async () => {
      await withStore(t(), async (s) => {
        await s.appendExperiences(Array.from({ length: 6 }, (_, i) => makeExp(`x${i}`)));
        const a = await s.takeFifo({ n: 2, source: 'usual', consumer: 'trainer', step: 1 });
        const b = await s.takeFifo({ n: 2, source: 'usual', consumer: 'trainer', step: 2 });
        assert.deepEqual([a.replayed, b.replayed], [false, false]);
        const again = await s.takeFifo({ n: 2, source: 'usual', consumer: 'trainer', step: 1 });
        assert.equal(again.replayed, true);
        assert.deepEqual(ids(again.experiences), ids(a.experiences));
        assert.equal((await s.get('x0'))!.useCount, 1, 'a replay does not count a second use');
        assert.deepEqual(await s.consumed('trainer', 2), ids(b.experiences));
        assert.equal(await s.lastConsumedStep('trainer'), 2);
        assert.equal(await s.lastConsumedStep('other'), null);
        assert.equal((await s.availability('fifo', { source: 'usual' })).ready, 2);
      });
    });

    test('runs sharing one buffer: takes, availability, recorded batches, tasks, checkpoints, state and scan are per run', async () => {
      await withStore(t(), async (s) => {
        // Run A's rows are older: an unscoped FIFO would hand them to run B first.
        await s.appendExperiences(Array.from({ length: 4 }, (_, i) => makeExp(`a${i}`, { runId: 'A' })));
        await s.appendExperiences(Array.from({ length: 4 }, (_, i) => makeExp(`b${i}`, { runId: 'B' })));
        await s.appendExperiences(
          ['ea', 'eb'].map((id) =>
            makeExp(id, { runId: id === 'ea' ? 'A' : 'B', source: 'expert', modelVersion: -1, logprobs: [] }),
          ),
        );
        const a1 = await s.takeFifo({ n: 2, source: 'usual', runId: 'A', consumer: 'trainer', step: 1 });
        assert.deepEqual(ids(a1.experiences), ['a0', 'a1']);
        // The same consumer and step in run B is a new batch of B's rows, not a replay of A's.
        const b1 = await s.takeFifo({ n: 2, source: 'usual', runId: 'B', consumer: 'trainer', step: 1 });
        assert.equal(b1.replayed, false);
        assert.deepEqual(ids(b1.experiences), ['b0', 'b1']);
        assert.deepEqual(await s.consumed('trainer', 1, 'A'), ['a0', 'a1']);
        assert.deepEqual(await s.consumed('trainer', 1, 'B'), ['b0', 'b1']);
        assert.deepEqual(await s.consumed('trainer', 1), [], 'nothing was recorded unscoped');
        assert.equal(await s.lastConsumedStep('trainer', 'A'), 1);
        assert.equal(await s.lastConsumedStep('trainer', 'C'), null);
        assert.deepEqual(await s.availability('fifo', { source: 'usual', runId: 'A' }), { ready: 2, stale: 0 });
        // B takes all its remaining rows and then waits: A's unused rows never fill B's batch.
        assert.deepEqual(ids((await s.takeFifo({ n: 2, source: 'usual', runId: 'B' })).experiences), ['b2', 'b3']);
        assert.deepEqual(ids((await s.takeFifo({ n: 1, source: 'usual', runId: 'B' })).experiences), []);
        assert.deepEqual(
          ids(
            (await s.takePriority({ n: 2, source: 'usual', runId: 'B', maxUses: 9, useDecay: 0.5, halfLifeMs: 1e9 }))
              .experiences,
          ).sort(),
          ['b0', 'b1'],
        );
        assert.deepEqual(ids((await s.takeCycle({ n: 1, source: 'expert', runId: 'B' })).experiences), ['eb']);
        assert.deepEqual(await s.availability('cycle', { source: 'expert', runId: 'A' }), { ready: 1, stale: 0 });
        assert.equal((await s.get('a2'))!.useCount, 0, "run B's reads left run A's rows alone");
        await s.putTasks('A', [{ id: 't', taskset: 'ts', domain: 'math', prompt: 'A?' }]);
        await s.putTasks('B', [{ id: 't', taskset: 'ts', domain: 'math', prompt: 'B?' }]);
        assert.deepEqual(
          (await s.listTasks('A')).map((x) => x.prompt),
          ['A?'],
        );
        await s.addCheckpoint({ runId: 'A', version: 3, path: 'a/3', checksum: 'x', createdAt: 1 });
        assert.equal(await s.latestCheckpoint('B'), null);
        await s.setState('A', 'k', 1);
        assert.equal(await s.getState('B', 'k'), null);
        assert.deepEqual(
          (await s.scan(0, 100, 'B')).map((r) => r.experience.id),
          ['b0', 'b1', 'b2', 'b3', 'eb'],
        );
        assert.equal((await s.stats('B')).total, 5);
      });
    });

    test('a buffer written by schema 1 opens upgraded: rows and batches recorded before stay readable', async () => {
      const url = t().freshUrl();
      await writeSchema1Buffer(
        url,
        [makeExp('o0', { useCount: 1 }), makeExp('o1', { useCount: 1 }), makeExp('o2'), makeExp('o3')],
        [{ consumer: 'trainer', step: 0, ids: ['o0', 'o1'] }],
      );
      const s = await openStore(url);
      try {
        assert.equal(await s.schemaVersion(), 3);
        assert.deepEqual(await s.get('o3'), makeExp('o3'));
        // Recorded without a run, so an unscoped (one-run buffer) reader resumes from them.
        assert.deepEqual(await s.consumed('trainer', 0), ['o0', 'o1']);
        const again = await s.takeFifo({ n: 2, source: 'usual', consumer: 'trainer', step: 0 });
        assert.deepEqual([again.replayed, ids(again.experiences)], [true, ['o0', 'o1']]);
        assert.deepEqual(
          ids((await s.takeFifo({ n: 2, source: 'usual', runId: 'run-1', consumer: 'trainer', step: 0 })).experiences),
          ['o2', 'o3'],
        );
      } finally {
        await s.close();
      }
    });

    test('priority: highest score first; decays with use count and age; use-count limit', async () => {
      await withStore(t(), async (s) => {
        const now = 1_000_000;
        await s.appendExperiences([
          makeExp('old', { createdAt: now - 10_000, metadata: { priority: 3 } }), // 3 * 0.5^(10000/5000) = 0.75
          makeExp('hi', { createdAt: now, metadata: { priority: 2 } }),
          makeExp('mid', { createdAt: now }),
        ]);
        const o = { source: 'usual' as const, maxUses: 2, useDecay: 0.4, halfLifeMs: 5000, now };
        assert.deepEqual(ids((await s.takePriority({ ...o, n: 1 })).experiences), ['hi']); // hi: 2 -> 0.8 after one use
        assert.deepEqual(ids((await s.takePriority({ ...o, n: 2 })).experiences), ['mid', 'hi']); // mid 1, hi 0.8, old 0.75
        assert.deepEqual(ids((await s.takePriority({ ...o, n: 1 })).experiences), ['old']); // hi used twice: limit reached
        await s.setPriority(['mid'], 100);
        assert.deepEqual(ids((await s.takePriority({ ...o, n: 1 })).experiences), ['mid']);
        assert.deepEqual(await s.availability('priority', o), { ready: 1, stale: 0 });
        assert.deepEqual(ids((await s.takePriority({ ...o, n: 2 })).experiences), []);
      });
    });

    test('cycle (expert): least used first, then oldest', async () => {
      await withStore(t(), async (s) => {
        await s.appendExperiences(
          ['e1', 'e2', 'e3'].map((id) => makeExp(id, { source: 'expert', modelVersion: -1, logprobs: [] })),
        );
        const seen: string[] = [];
        for (let i = 0; i < 3; i++) seen.push(...ids((await s.takeCycle({ n: 2, source: 'expert' })).experiences));
        assert.deepEqual(seen, ['e1', 'e2', 'e3', 'e1', 'e2', 'e3']);
        assert.deepEqual(ids((await s.takeCycle({ n: 1, source: 'expert', maxUses: 2 })).experiences), []);
      });
    });

    test('two connections taking at once never take the same row', async () => {
      await withStore(t(), async (s, url) => {
        await s.appendExperiences(Array.from({ length: 200 }, (_, i) => makeExp(`c${i}`)));
        const other = await openStore(url);
        try {
          // An empty take must mean "fewer than n left": every taker stops at its first empty take,
          // so a take that came back short while others held rows would leave rows untaken.
          const run = async (st: ExperienceStore) => {
            const got: string[] = [];
            for (;;) {
              const r = await st.takeFifo({ n: 5, source: 'usual' });
              if (!r.experiences.length) return got;
              got.push(...ids(r.experiences));
            }
          };
          const all = (await Promise.all([run(s), run(s), run(other), run(other), run(other)])).flat();
          assert.equal(all.length, 200);
          assert.equal(new Set(all).size, 200);
        } finally {
          await other.close();
        }
      });
    });

    test('tasks, checkpoints, run state survive reopening', async () => {
      const url = t().freshUrl();
      const s = await openStore(url);
      assert.equal(
        await s.putTasks('r', [
          { id: 't1', taskset: 'ts', domain: 'math', prompt: '1+1', answer: '2' },
          { id: 't2', taskset: 'ts', domain: 'text' },
        ]),
        2,
      );
      assert.equal(
        await s.putTasks('r', [
          { id: 't1', taskset: 'ts', domain: 'math', prompt: '1+1=?', answer: '2' },
          { id: 't3', taskset: 'ts', domain: 'text' },
        ]),
        1,
      );
      await s.addCheckpoint({ runId: 'r', version: 1, path: 'ck/1', checksum: 'aa', createdAt: 1 });
      await s.addCheckpoint({ runId: 'r', version: 2, path: 'ck/2', checksum: 'bb', createdAt: 2 });
      await s.setState('r', 'trainer', { step: 7 });
      await s.setState('r', 'trainer', { step: 8 });
      await s.close();
      const s2 = await openStore(url);
      try {
        assert.deepEqual(
          (await s2.listTasks('r')).map((x) => [x.id, x.prompt]),
          [
            ['t1', '1+1=?'],
            ['t2', undefined],
            ['t3', undefined],
          ],
        );
        assert.deepEqual(
          (await s2.listTasks('r', { offset: 1, limit: 1 })).map((x) => x.id),
          ['t2'],
        );
        assert.equal(await s2.countTasks('r'), 3);
        assert.equal(await s2.countTasks('other'), 0);
        assert.equal((await s2.getTask('r', 't1'))?.prompt, '1+1=?');
        assert.equal(await s2.getTask('r', 'nope'), null);
        assert.equal(await s2.getTask('other', 't1'), null);
        assert.deepEqual(await s2.latestCheckpoint('r'), {
          runId: 'r',
          version: 2,
          path: 'ck/2',
          checksum: 'bb',
          createdAt: 2,
        });
        assert.equal((await s2.listCheckpoints('r')).length, 2);
        assert.equal(await s2.latestCheckpoint('none'), null);
        assert.deepEqual(await s2.getState('r', 'trainer'), { step: 8 });
        assert.equal(await s2.getState('r', 'missing'), null);
        assert.equal(await s2.schemaVersion(), 3);
      } finally {
        await s2.close();
      }
    });

    test('mutate is atomic and guarded', async () => {
      await withStore(t(), async (s) => {
        await s.appendExperiences([makeExp('m')]);
        const log = {
          experienceId: 'm',
          who: 'ann',
          at: 1,
          action: 'rate' as const,
          before: null,
          after: { rating: 5 },
          undoes: null,
        };
        const id = await s.mutate({
          log,
          update: {
            id: 'm',
            expect: { source: 'usual', feedback: null },
            set: { source: 'usual', feedback: { rating: 5 } },
          },
        });
        assert.equal((await s.get('m'))!.feedback?.rating, 5);
        // Stale guard: nothing of the mutation is applied, not even its log row or insert.
        await assert.rejects(
          s.mutate({
            log,
            insert: makeExp('n'),
            update: {
              id: 'm',
              expect: { source: 'usual', feedback: null },
              set: { source: 'usual', feedback: { rejected: true } },
            },
          }),
          ConflictError,
        );
        assert.equal(await s.get('n'), null);
        assert.equal((await s.feedbackLog()).length, 1);
        const entry = await s.feedbackEntry(id);
        assert.deepEqual(
          { ...entry!, at: 0 },
          {
            id,
            experienceId: 'm',
            who: 'ann',
            at: 0,
            action: 'rate',
            before: null,
            after: { rating: 5 },
            undoes: null,
            undoneBy: null,
          },
        );
        // Rejection takes the row out of sampling.
        await s.mutate({
          log: { ...log, action: 'reject' },
          update: {
            id: 'm',
            expect: { source: 'usual', feedback: { rating: 5 } },
            set: { source: 'usual', feedback: { rating: 5, rejected: true } },
          },
        });
        assert.deepEqual((await s.takeFifo({ n: 1, source: 'usual' })).experiences, []);
        assert.equal(await s.count({ rejected: true }), 1);
      });
    });

    test('processes: a writer killed with SIGKILL mid-run loses no acknowledged batch and leaves no partial one', async () => {
      await withStore(t(), async (s, url) => {
        const acked = new Set<number>();
        const proc = spawn(process.execPath, ['--import', 'tsx', child, 'writer', url, 'k', '100000'], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let err = '';
        proc.stderr.on('data', (d) => (err += String(d)));
        await new Promise<void>((resolve, reject) => {
          let buf = '';
          proc.stdout.on('data', (d) => {
            buf += String(d);
            const lines = buf.split('\n');
            buf = lines.pop()!;
            for (const l of lines) if (l.startsWith('ack ')) acked.add(Number(l.slice(4)));
            // Kill at an arbitrary moment once a few batches are in: most likely inside the next batch.
            if (acked.size >= 6) proc.kill('SIGKILL');
          });
          proc.on('exit', (code, sig) =>
            sig === 'SIGKILL' ? resolve() : reject(new Error(`writer exited ${code}: ${err}`)),
          );
        });
        const byBatch = new Map<number, string[]>();
        let after = 0;
        for (;;) {
          const page = await s.scan(after, 500);
          if (!page.length) break;
          after = page.at(-1)!.seq;
          for (const { experience: e } of page) {
            const b = Number(e.metadata!.batch);
            (byBatch.get(b) ?? byBatch.set(b, []).get(b)!).push(e.id);
            // Complete: every stored experience equals what the writer built.
            assert.deepEqual(e, makeExp(e.id, { groupId: e.groupId, metadata: { batch: b } }));
          }
        }
        for (const b of acked) assert.equal(byBatch.get(b)?.length, 64, `acknowledged batch ${b} is complete`);
        for (const [b, xs] of byBatch) assert.equal(xs.length, 64, `batch ${b} is whole (no partial batch)`);
        assert.ok(byBatch.size >= acked.size && byBatch.size <= acked.size + 1);
      });
    });

    test('processes: a reader killed with SIGKILL mid-run leaves use counts and its recorded batches consistent', async () => {
      await withStore(t(), async (s, url) => {
        await s.appendExperiences(Array.from({ length: 2000 }, (_, i) => makeExp(`r${i}`)));
        const printed: string[] = [];
        const proc = spawn(process.execPath, ['--import', 'tsx', child, 'reader', url, 'rk'], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let err = '';
        proc.stderr.on('data', (d) => (err += String(d)));
        await new Promise<void>((resolve, reject) => {
          let buf = '';
          proc.stdout.on('data', (d) => {
            buf += String(d);
            const lines = buf.split('\n');
            buf = lines.pop()!;
            for (const l of lines) if (l.startsWith('took ')) printed.push(...l.slice(5).split(','));
            if (printed.length >= 40) proc.kill('SIGKILL');
          });
          proc.on('exit', (code, sig) =>
            sig === 'SIGKILL' ? resolve() : reject(new Error(`reader exited ${code}: ${err}`)),
          );
        });
        const last = (await s.lastConsumedStep('rk'))!;
        const recorded: string[] = [];
        for (let step = 0; step <= last; step++) {
          const ids = await s.consumed('rk', step);
          assert.equal(ids.length, 8, `step ${step} recorded whole`);
          recorded.push(...ids);
        }
        const used = await s.list({ limit: 10_000 }).then((xs) => xs.filter((e) => e.useCount > 0));
        assert.ok(used.every((e) => e.useCount === 1));
        assert.deepEqual(
          new Set(used.map((e) => e.id)),
          new Set(recorded),
          'a row is marked used exactly when a batch records it',
        );
        for (const id of printed) assert.ok(recorded.includes(id), `acknowledged take of ${id} is recorded`);
        // The restarted reader gets its last batch again instead of a new one.
        const again = await s.takeFifo({ n: 8, source: 'usual', consumer: 'rk', step: last });
        assert.equal(again.replayed, true);
        assert.deepEqual(ids(again.experiences), recorded.slice(-8));
      });
    });

    test('processes: one writer and two readers at once; every row taken at most once', async () => {
      await withStore(t(), async (s, url) => {
        const run = (args: string[]) =>
          new Promise<string[]>((resolve, reject) => {
            const p = spawn(process.execPath, ['--import', 'tsx', child, ...args], {
              stdio: ['ignore', 'pipe', 'pipe'],
            });
            let out = '';
            let err = '';
            p.stdout.on('data', (d) => (out += String(d)));
            p.stderr.on('data', (d) => (err += String(d)));
            p.on('exit', (code) =>
              code === 0 ? resolve(out.trim().split('\n')) : reject(new Error(`${args[0]} exited ${code}: ${err}`)),
            );
          });
        const readers = [run(['reader', url, 'r1']), run(['reader', url, 'r2'])];
        const w = await run(['writer', url, 'w', '8']);
        assert.equal(w.filter((l) => l.startsWith('ack')).length, 8);
        await s.setState('test', 'stop', true);
        const outs = await Promise.all(readers);
        const taken = outs.flatMap((lines) =>
          lines.filter((l) => l.startsWith('took ')).flatMap((l) => l.slice(5).split(',')),
        );
        assert.equal(taken.length, 512, 'all 512 rows taken (64 x 8, in batches of 8)');
        assert.equal(new Set(taken).size, taken.length, 'no row taken twice');
        assert.equal(await s.count(), 512);
        assert.equal((await s.availability('fifo', { source: 'usual' })).ready, 0);
        // Each reader's batches are recorded as its steps 0..k-1. A reader that took nothing (it can
        // start after the other has drained the writer on a loaded machine) has no last step: null,
        // not -1 (this arithmetic once read `null + 1` as one step and failed with 65 !== 64).
        for (const [i, name] of ['r1', 'r2'].entries()) {
          const took = outs[i]!.filter((l) => l.startsWith('took ')).length;
          const last = await s.lastConsumedStep(name);
          assert.equal(last === null ? 0 : last + 1, took, `every batch ${name} took is recorded under its own steps`);
          for (let step = 0; step < took; step++)
            assert.equal((await s.consumed(name, step)).length, 8, `${name} step ${step} records one batch of 8`);
        }
      });
    });
  });
}
