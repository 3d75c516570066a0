// FillingExplorer (explorer/filling-explorer.ts) refills a step until it holds the trainer's batch. When nothing
// can be sampled at all (here: rollout workers that cannot start their engine) refilling never helps:
// the overlapped memory explorer of the main job spun 3,296 rounds at one step on such workers before
// this bound. Now the step fails after maxFailedRounds rounds in a row of nothing but infra failures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FillingExplorer } from '../../backend/explorer/filling-explorer.js';
import { WorkerRolloutModel } from '../../backend/explorer/workers/pool.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { rewardFns } from '../../backend/explorer/rewards/registry.js';
import { Transformer } from '../../backend/model/transformer.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { makeConfig } from '../../backend/model/config.js';
import { initEngine } from '../../backend/model/engine.js';
import type { BackendName } from '../../backend/model/engine.js';
import type { Experience, Task } from '../../backend/core/types.js';

test('FillingExplorer: a step whose every sample is an infra failure fails after maxFailedRounds, instead of refilling forever', async () => {
  await initEngine();
  const tok = CharTokenizer.train(['reverse: abc cba']);
  const model = new Transformer(
    makeConfig({ vocabSize: tok.vocabSize, dModel: 16, nLayers: 1, nHeads: 2, nKvHeads: 1, dFF: 32, maxSeqLen: 32 }),
    1,
  );
  // A tfjs backend no worker has: each worker fails to start, every job comes back as an infra failure.
  const pool = new WorkerRolloutModel({
    workers: 1,
    config: model.config,
    tokenizer: tok,
    backend: 'no-such-backend' as BackendName,
    maxRetries: 0,
  });
  const stored: Experience[] = [];
  try {
    await pool.setWeights(model, 0);
    const tasks: Task[] = [{ id: 't1', prompt: 'reverse: abc', answer: 'cba' } as Task];
    const explorer = new FillingExplorer(
      workflows.get('single_turn'),
      rewardFns.get('exact_match'),
      { next: (n: number) => tasks.slice(0, n) } as never,
      { append: async (e: Experience[]) => void stored.push(...e) },
      { runId: 'r', tasksPerStep: 1, repeatTimes: 2, sampling: { maxNewTokens: 2 }, seed: 1 } as never,
    );
    explorer.need = 2;
    explorer.maxFailedRounds = 3;
    await assert.rejects(explorer.exploreStep(pool), /every sample of 3 rounds in a row was an infra failure/);
    assert.equal(
      stored.length,
      3 * 2,
      'three rounds of two samples were stored (as infra failures) before the step failed',
    );
    assert.ok(stored.every((e) => e.status === 'infra_failure'));
  } finally {
    await pool.close();
    model.dispose();
  }
});
