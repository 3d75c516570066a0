import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Task } from '../../backend/core/types.js';
import { makeSelector, taskSelectors } from '../../backend/buffer/taskset/selectors/index.js';

const tasks = (n: number, difficulty?: (i: number) => number): Task[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `t${i}`,
    taskset: 'x',
    domain: 'math',
    prompt: `p${i}`,
    answer: '1',
    ...(difficulty ? { difficulty: difficulty(i) } : {}),
  }));
const ids = (ts: Task[]) => ts.map((t) => t.id);

test('registry names', () => {
  assert.deepEqual(taskSelectors.names(), ['curriculum', 'priority', 'random', 'sequential', 'shuffle']);
  assert.throws(() => makeSelector('nope', []), /unknown task selector 'nope'/);
});

test('sequential wraps around and resumes from its state', () => {
  const s = makeSelector('sequential', tasks(5));
  assert.deepEqual(ids(s.next(3)), ['t0', 't1', 't2']);
  const st = JSON.parse(JSON.stringify(s.state()));
  assert.deepEqual(ids(s.next(4)), ['t3', 't4', 't0', 't1']);
  const r = makeSelector('sequential', tasks(5));
  r.restore(st);
  assert.deepEqual(ids(r.next(4)), ['t3', 't4', 't0', 't1']);
});

test('shuffle: each epoch is a permutation, epochs differ, same seed same order, resumable', () => {
  const s = makeSelector('shuffle', tasks(20), { seed: 7 });
  const e1 = ids(s.next(20));
  const e2 = ids(s.next(20));
  assert.equal(new Set(e1).size, 20);
  assert.equal(new Set(e2).size, 20);
  assert.notDeepEqual(e1, e2, 'reshuffled per epoch');
  assert.notDeepEqual(e1, ids(tasks(20)), 'not file order');
  assert.deepEqual(ids(makeSelector('shuffle', tasks(20), { seed: 7 }).next(20)), e1);
  assert.notDeepEqual(ids(makeSelector('shuffle', tasks(20), { seed: 8 }).next(20)), e1);
  const a = makeSelector('shuffle', tasks(20), { seed: 7 });
  a.next(13);
  const st = JSON.parse(JSON.stringify(a.state()));
  const b = makeSelector('shuffle', tasks(20), { seed: 7 });
  b.restore(st);
  assert.deepEqual(ids(b.next(15)), ids(a.next(15)));
});

test('shuffle: a task list edited mid-epoch does not repeat tasks already given', () => {
  const s = makeSelector('shuffle', tasks(10), { seed: 1 });
  const first = ids(s.next(4));
  s.setTasks([...tasks(10), { id: 'new', taskset: 'x', domain: 'math', prompt: 'n', answer: '1' }]);
  const rest = ids(s.next(7));
  assert.equal(new Set([...first, ...rest]).size, 11);
});

test('random: seeded, with replacement, resumable', () => {
  const s = makeSelector('random', tasks(5), { seed: 3 });
  const draws = ids(s.next(50));
  assert.ok(new Set(draws).size <= 5 && draws.length === 50);
  assert.deepEqual(ids(makeSelector('random', tasks(5), { seed: 3 }).next(50)), draws);
  const st = s.state();
  const next = ids(s.next(10));
  const r = makeSelector('random', tasks(5), { seed: 3 });
  r.restore(JSON.parse(JSON.stringify(st)));
  assert.deepEqual(ids(r.next(10)), next);
});

test('priority: weight 1 - success rate, prior for unseen tasks, no repeats within a batch', () => {
  const s = makeSelector('priority', tasks(4), { seed: 5, priorSuccessRate: 0.5, minWeight: 0 });
  // t0 always solved (weight 0), t1 never (weight 1), t2 half (0.5); t3 unseen (prior 0.5).
  s.update([
    { taskId: 't0', successRate: 1, count: 8 },
    { taskId: 't1', rewards: [0, 0, 0, 0] },
    { taskId: 't2', rewards: [1, 0, 1, 0] },
  ]);
  const counts: Record<string, number> = { t0: 0, t1: 0, t2: 0, t3: 0 };
  for (let k = 0; k < 2000; k++) {
    const b = ids(s.next(2));
    assert.equal(new Set(b).size, 2, 'without replacement within a batch');
    for (const id of b) counts[id]!++;
  }
  assert.equal(counts.t0, 0, 'solved task never drawn with floor 0');
  assert.ok(counts.t1! > counts.t2! && counts.t1! > counts.t3!, JSON.stringify(counts));
  assert.ok(Math.abs(counts.t2! - counts.t3!) < 250, `equal weights draw alike: ${JSON.stringify(counts)}`);
  // A batch larger than the drawable tasks starts another round.
  assert.equal(s.next(7).length, 7);
  const st = JSON.parse(JSON.stringify(s.state()));
  const r = makeSelector('priority', tasks(4), { seed: 5, minWeight: 0 });
  r.restore(st);
  assert.deepEqual(ids(r.next(3)), ids(s.next(3)));
});

test('priority: by default a solved task keeps a floor weight (0.1 of an unsolved one) and still comes back', () => {
  const s = makeSelector('priority', tasks(2), { seed: 9 });
  s.update([
    { taskId: 't0', successRate: 1, count: 8 },
    { taskId: 't1', successRate: 0, count: 8 },
  ]);
  let solved = 0;
  for (let k = 0; k < 2000; k++) if (s.next(1)[0]!.id === 't0') solved++;
  // Weights 0.1 and 1: t0 about 1/11 of the draws.
  assert.ok(solved > 100 && solved < 280, `solved task drawn ${solved} of 2000`);
});

test('curriculum: easy tasks first, window grows towards hard ones over rampSteps', () => {
  const ts = tasks(100, (i) => (99 - i) / 99); // t99 easiest, t0 hardest
  const s = makeSelector('curriculum', ts, { seed: 1, startFraction: 0.1, rampSteps: 10 });
  const early = ids(s.next(10));
  assert.deepEqual(
    [...early].sort(),
    Array.from({ length: 10 }, (_, k) => `t${90 + k}`).sort(),
    'step 0: the 10 easiest',
  );
  for (let k = 1; k < 10; k++) s.next(1);
  const late = s.next(100).map((t) => t.difficulty!);
  assert.ok(Math.max(...late) === 1, 'after the ramp the hardest tasks are available');
  const slide = makeSelector('curriculum', ts, { seed: 1, startFraction: 0.1, rampSteps: 10, slide: true });
  for (let k = 0; k < 10; k++) slide.next(1);
  assert.ok(
    slide.next(10).every((t) => t.difficulty! >= 0.9),
    'sliding window drops the easy tasks',
  );
  // Tasks without a difficulty are ranked by observed success.
  const u = makeSelector('curriculum', tasks(3), { startFraction: 0.3, rampSteps: 1000 });
  u.update([
    { taskId: 't2', successRate: 1 },
    { taskId: 't0', successRate: 0 },
  ]);
  assert.deepEqual(ids(u.next(1)), ['t2']);
});
