// Partial rollouts in the trainer: loss_segments all keeps every segment of a finished trajectory in
// the loss; fresh masks the segments sampled by weights older than the staleness bound (action mask
// 0 there, so the batch's trained tokens drop), in the trainer loop every placement runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine } from '../../backend/model/engine.js';
import { buildBatch, disposeBatch, maskStaleSegments } from '../../backend/trainer/batch.js';
import { runTrainerLoop } from '../../backend/trainer/step-loop.js';
import type { Sampler } from '../../backend/buffer/sampler/index.js';
import type { StepMetrics } from '../../backend/trainer/trainer.js';
import type { Experience } from '../../backend/core/types.js';

await initEngine();

function row(id: string, segments?: Experience['segments']): Experience {
  const R = 6;
  return {
    id,
    taskId: 't',
    groupId: 'g',
    runId: 'r',
    source: 'usual',
    promptTokens: [1, 5, 6],
    promptText: 'p',
    responseTokens: [7, 8, 9, 10, 11, 12],
    responseText: 'x',
    // Token 4 is an environment token (never trained on, whatever its segment).
    actionMask: [1, 1, 1, 1, 0, 1],
    logprobs: Array.from({ length: R }, (_, j) => -0.1 * (j + 1)),
    modelVersion: segments?.at(-1)?.version ?? 2,
    reward: 1,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
    ...(segments ? { segments } : {}),
  };
}

const segs = [
  { version: 0, start: 0, end: 3 },
  { version: 2, start: 3, end: 6 },
];

test('maskStaleSegments: segments older than the bound leave the loss; others and rows without segments stay', () => {
  const a = row('a', segs);
  const b = row('b');
  const { experiences, masked } = maskStaleSegments([a, b], 1);
  assert.deepEqual(experiences[0]!.actionMask, [0, 0, 0, 1, 0, 1]);
  assert.equal(masked, 3);
  assert.equal(experiences[1], b, 'a row without segments is passed through');
  assert.deepEqual(a.actionMask, [1, 1, 1, 1, 0, 1], 'the sampled row is not changed');
  // All within the bound: nothing masked.
  assert.equal(maskStaleSegments([a], 0).masked, 0);
  // Trained tokens in the batch: all segments 5, fresh only 2.
  const all = buildBatch([a], 0);
  const fresh = buildBatch(experiences.slice(0, 1), 0);
  try {
    assert.equal(all.tokens, 5);
    assert.equal(fresh.tokens, 2);
    // The behaviour log-probs stay where they were (the fresh segment's ratio is unchanged).
    assert.deepEqual(Array.from(fresh.oldLogprob.dataSync()), Array.from(all.oldLogprob.dataSync()));
  } finally {
    disposeBatch(all);
    disposeBatch(fresh);
  }
});

async function loop(
  freshSegments: number | undefined,
): Promise<{ seen: Experience[][]; recs: Record<string, unknown>[] }> {
  const seen: Experience[][] = [];
  const recs: Record<string, unknown>[] = [];
  const batch = [row('a', segs), row('b', [{ version: 1, start: 0, end: 6 }])];
  const sampler: Sampler = {
    name: 'fixed',
    sample: async () => ({ experiences: batch, expertCount: 0, replayed: false, waitedMs: 0 }),
    waitStatus: async () => null,
  } as unknown as Sampler;
  await runTrainerLoop({
    trainer: {
      trainStep: async (exps: Experience[]) => {
        seen.push(exps);
        return {
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
      },
    },
    sampler,
    batchSize: 2,
    step: 2,
    stageStep: 0,
    steps: 2,
    syncInterval: 1,
    publish: async () => undefined,
    onMetrics: (r) => recs.push(r),
    ...(freshSegments !== undefined ? { freshSegments } : {}),
  });
  return { seen, recs };
}

test("trainer loop: loss_segments fresh masks by the step's version minus max_staleness; all trains every segment", async () => {
  const all = await loop(undefined);
  for (const exps of all.seen) for (const e of exps) assert.deepEqual(e.actionMask, [1, 1, 1, 1, 0, 1]);
  assert.equal(all.recs.find((r) => r.kind === 'train')!.stale_segment_tokens, undefined);
  const fresh = await loop(1);
  // Step 2, bound 1: versions >= 1 count. Row a's v0 segment (3 tokens) is masked; row b (v1) is kept.
  assert.deepEqual(fresh.seen[0]![0]!.actionMask, [0, 0, 0, 1, 0, 1]);
  assert.deepEqual(fresh.seen[0]![1]!.actionMask, [1, 1, 1, 1, 0, 1]);
  assert.equal(fresh.recs.filter((r) => r.kind === 'train')[0]!.stale_segment_tokens, 3);
  // Step 3: v1 is now stale too (3 - 1 = 2): row b loses its 5 trained tokens.
  assert.deepEqual(fresh.seen[1]![1]!.actionMask, [0, 0, 0, 0, 0, 0]);
  assert.equal(fresh.recs.filter((r) => r.kind === 'train')[1]!.stale_segment_tokens, 3 + 5);
});
