// long2short: shortest-rejection sampling (shortest correct -> expert copy) and the pair marks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Experience } from '../../backend/core/types.js';
import { ExperiencePipeline } from '../../backend/buffer/pipeline/experience/index.js';

let n = 0;
function exp(groupId: string, len: number, reward: number, over: Partial<Experience> = {}): Experience {
  const tokens = Array.from({ length: len }, (_, i) => 5 + i);
  return {
    id: `e${n++}`,
    taskId: groupId,
    groupId,
    runId: 'r',
    source: 'usual',
    promptTokens: [1, 2],
    promptText: 'q',
    responseTokens: tokens,
    responseText: 'x'.repeat(len),
    actionMask: tokens.map(() => 1),
    logprobs: tokens.map(() => -0.5),
    modelVersion: 2,
    reward,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
    ...over,
  };
}

test('the shortest correct sample becomes expert data, marked with its origin; pairs marked on the rejected', () => {
  // lengths 30 (right), 12 (right: the shortest), 12 (wrong), 50 (right), 12 (right, tie: no preference)
  const g = [exp('g', 30, 1), exp('g', 12, 1), exp('g', 12, 0), exp('g', 50, 1), exp('g', 12, 1)];
  const r = ExperiencePipeline.fromConfig([{ name: 'validity' }, { name: 'long2short' }]).run(g);
  const experts = r.trainable.filter((e) => e.source === 'expert');
  assert.equal(experts.length, 1);
  const x = experts[0]!;
  assert.equal(x.id, `${g[1]!.id}~shortest`);
  assert.deepEqual(x.metadata, { origin: 'shortest_rejection', from: g[1]!.id });
  assert.equal(x.responseText, g[1]!.responseText);
  assert.deepEqual(x.responseTokens, g[1]!.responseTokens);
  assert.equal(x.taskId, 'g');
  const marks = new Map(
    r.trainable
      .filter((e) => e.source === 'usual')
      .map((e) => [e.id, (e.metadata?.long2short as { chosen: string } | undefined)?.chosen]),
  );
  // rejected: the longer correct ones (30, 50) and the incorrect one (12); not the chosen, not the tie
  assert.deepEqual([...marks.values()], [g[1]!.id, undefined, g[1]!.id, g[1]!.id, undefined]);
  assert.equal(r.counts['long2short:expert'], 1);
  assert.equal(r.counts['long2short:pair'], 3);
  assert.equal(g[0]!.metadata, undefined, 'caller objects untouched');
});

test('no correct sample, one sample, expert rows and invalid rows: nothing made; switches and threshold', () => {
  const none = [exp('a', 5, 0), exp('a', 9, 0)];
  const solo = [exp('b', 5, 1)];
  const mixed = [
    exp('c', 5, 1, { source: 'expert', modelVersion: -1 }),
    exp('c', 3, 1, { status: 'invalid' }),
    exp('c', 9, 1),
  ];
  const r = ExperiencePipeline.fromConfig([{ name: 'long2short' }]).run([...none, ...solo, ...mixed]);
  assert.equal(r.experiences.length, 6);
  assert.ok(r.experiences.every((e) => !e.metadata?.long2short && !e.metadata?.origin));
  // pairs only; a reward 0.5 counts as correct at threshold 0.5 ('correct' detail absent)
  const q = ExperiencePipeline.fromConfig([{ name: 'long2short', expert: false, correct_threshold: 0.5 }]).run([
    exp('d', 20, 0.5),
    exp('d', 10, 0.2),
  ]);
  assert.equal(q.trainable.filter((e) => e.source === 'expert').length, 0);
  assert.deepEqual(
    q.trainable.map((e) => e.metadata),
    [undefined, { long2short: { chosen: q.trainable[0]!.id } }],
  );
  // the reward function's correct flag wins over the reward
  const f = ExperiencePipeline.fromConfig([{ name: 'long2short', pairs: false }]).run([
    exp('e', 4, 1, { rewardDetails: { correct: 0 } }),
    exp('e', 8, 0.1, { rewardDetails: { correct: 1 } }),
  ]);
  assert.deepEqual(
    f.trainable.filter((e) => e.source === 'expert').map((e) => e.metadata!.from),
    [f.trainable[1]!.id],
  );
  assert.throws(
    () => ExperiencePipeline.fromConfig([{ name: 'long2short', expert: false, pairs: false }]),
    /experience_pipeline\[0\]: nothing to do/,
  );
  assert.throws(
    () => ExperiencePipeline.fromConfig([{ name: 'long2short', min_group: 1 }]),
    /experience_pipeline\[0\]\.min_group/,
  );
});
