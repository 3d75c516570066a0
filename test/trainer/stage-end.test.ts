// A stage bounded by a wall-clock budget ends exactly once (issue 25): the trainer loop decides "done"
// once per round and publishes that decision; a budget that runs out while a checkpoint is being
// published must not end the loop behind a checkpoint marked not done (the checkpoint placement's
// coordinator then restarted the stage and ran its whole budget again). The clock is the test's own,
// moved by the fake trainer and publish, so the race happens on every run.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runTrainerLoop, type TrainerLoopOptions } from '../../backend/trainer/step-loop.js';
import type { Sampler } from '../../backend/buffer/sampler/index.js';
import type { StepMetrics } from '../../backend/trainer/trainer.js';
import type { Experience } from '../../backend/core/types.js';

const metrics = {
  step: 0,
  loss: 0,
  grad_norm: 0,
  lr: 0,
  tokens: 0,
  tokens_per_s: 0,
  staleness: 0,
  time_grad_s: 0,
  time_optim_s: 0,
  time_total_s: 0,
  expert_rows: 0,
  skipped_experiences: 0,
} as StepMetrics;
const row: Experience = {
  id: 'a',
  taskId: 't',
  groupId: 'g',
  runId: 'r',
  source: 'usual',
  promptTokens: [1],
  promptText: 'p',
  responseTokens: [2],
  responseText: 'x',
  actionMask: [1],
  logprobs: [-0.1],
  modelVersion: 0,
  reward: 1,
  status: 'ok',
  useCount: 0,
  createdAt: 0,
};
const sampler = {
  name: 'fixed',
  sample: async () => ({ experiences: [row], expertCount: 0, replayed: false, waitedMs: 0 }),
  waitStatus: async () => null,
} as unknown as Sampler;

interface Published {
  version: number;
  stageStep: number;
  done: boolean;
}

/** A loop on a fake clock: each step takes `stepS` seconds; `publishS(version)` how long publishing that version takes. */
async function run(o: {
  wallSeconds?: number;
  steps?: number;
  stepS: number;
  publishS: (v: number) => number;
  syncInterval?: number;
  explore?: TrainerLoopOptions['explore'];
  signal?: AbortSignal;
}) {
  let clock = 1_000_000;
  const published: Published[] = [];
  const r = await runTrainerLoop({
    trainer: { trainStep: async () => ((clock += o.stepS * 1000), metrics) },
    sampler,
    batchSize: 1,
    step: 0,
    stageStep: 0,
    ...(o.wallSeconds !== undefined ? { wallSeconds: o.wallSeconds } : {}),
    ...(o.steps !== undefined ? { steps: o.steps } : {}),
    syncInterval: o.syncInterval ?? 1,
    ...(o.explore ? { explore: o.explore } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    now: () => clock,
    publish: async (version, stageStep, done) => {
      clock += o.publishS(version) * 1000;
      published.push({ version, stageStep, done });
    },
    onMetrics: () => undefined,
  });
  return { r, published };
}

function endsOnce(published: Published[], r: { step: number; stageDone: boolean }): void {
  const marks = published.filter((p) => p.done);
  assert.equal(marks.length, 1, `one stage-done checkpoint, got ${JSON.stringify(published)}`);
  assert.deepEqual(published.at(-1), marks[0], 'the stage-done checkpoint is the last one published');
  assert.equal(marks[0]!.version, r.step, 'it is the version the loop ends at');
  assert.equal(r.stageDone, true);
}

test('wall_seconds: the budget runs out while a checkpoint is published; the stage still ends with one done checkpoint', async () => {
  // Steps of 4 s, budget 10 s: v1 is published at 4 s (not done) and its publish takes until 11 s.
  const { r, published } = await run({ wallSeconds: 10, stepS: 4, publishS: (v) => (v === 1 ? 7 : 0) });
  endsOnce(published, r);
  // The round that published v1 decided "not done", so the loop trains the next step and marks that one.
  assert.deepEqual(published, [
    { version: 1, stageStep: 1, done: false },
    { version: 2, stageStep: 2, done: true },
  ]);
});

test('wall_seconds with sync_interval 3: the budget runs out during a sync; the end is still published once, done', async () => {
  const { r, published } = await run({
    wallSeconds: 20,
    stepS: 2,
    syncInterval: 3,
    publishS: (v) => (v === 3 ? 30 : 0),
  });
  endsOnce(published, r);
  assert.deepEqual(
    published.map((p) => [p.version, p.done]),
    [
      [3, false],
      [4, true],
    ],
  );
});

test('wall_seconds: the budget runs out during an explore that yields nothing: v stays, marked done once', async () => {
  let clock = 0;
  const published: Published[] = [];
  let round = 0;
  const r = await runTrainerLoop({
    trainer: { trainStep: async () => ((clock += 1000), metrics) },
    sampler,
    batchSize: 1,
    step: 5,
    stageStep: 0,
    wallSeconds: 10,
    syncInterval: 1,
    now: () => clock,
    explore: async () => {
      round++;
      if (round === 3) {
        clock += 60_000; // a long explore step that made nothing trainable
        return null;
      }
      return 1;
    },
    publish: async (version, stageStep, done) => void published.push({ version, stageStep, done }),
    onMetrics: () => undefined,
  });
  endsOnce(published, r);
  // v6 and v7 were published as ordinary steps, then v7 again as the stage's end (nothing newer was trained).
  assert.deepEqual(published, [
    { version: 6, stageStep: 1, done: false },
    { version: 7, stageStep: 2, done: false },
    { version: 7, stageStep: 2, done: true },
  ]);
});

test('steps bound: the last step is published once, done; a stopped loop publishes a resume point, never done', async () => {
  const a = await run({ steps: 3, stepS: 1, publishS: () => 5 });
  endsOnce(a.published, a.r);
  assert.deepEqual(
    a.published.map((p) => p.done),
    [false, false, true],
  );

  const stop = new AbortController();
  const b = await run({
    wallSeconds: 100,
    stepS: 1,
    syncInterval: 4,
    publishS: () => 0,
    explore: async (step) => (step === 2 && stop.abort(), 1),
    signal: stop.signal,
  });
  assert.equal(b.r.stageDone, false);
  assert.deepEqual(
    b.published,
    [{ version: 3, stageStep: 3, done: false }],
    'the stop leaves v3 as a resume point, not done',
  );
});
