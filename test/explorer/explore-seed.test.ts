// Explorer.exploreStep with a fixed seed (a distributed job's, from its id and attempt): the workflow
// samples with that seed, and the explorer's own seed sequence is left where it was.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Explorer } from '../../backend/explorer/explorer.js';
import type { RolloutModel, Workflow, WorkflowContext } from '../../backend/explorer/workflow.js';
import type { Task } from '../../backend/core/types.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';

const model = { version: 0, tokenizer: new ByteTestTokenizer() } as unknown as RolloutModel;
const task: Task = { id: 't', prompt: 'q', answer: 'a' } as Task;

function explorer(seen: WorkflowContext[]): Explorer {
  const workflow: Workflow = {
    name: 'seen',
    async run(_tasks, ctx) {
      seen.push(ctx);
      return [];
    },
  };
  const sampling = { maxNewTokens: 4, temperature: 1, topK: 0, topP: 1 };
  return new Explorer(
    workflow,
    async () => ({ reward: 0, status: 'ok' as const }),
    { next: () => [task] },
    { append: async () => undefined },
    { runId: 'r', tasksPerStep: 1, repeatTimes: 1, sampling, seed: 7 },
  );
}

test('exploreStep: a fixed seed is the workflow seed and takes no draw from the explorer seed sequence', async () => {
  const fixed: WorkflowContext[] = [];
  const a = explorer(fixed);
  a.step = 12;
  await a.exploreStep(model, { seed: 424242 });
  await a.exploreStep(model);
  assert.equal(fixed[0]!.seed, 424242);
  assert.equal(fixed[0]!.step, 12);
  const plain: WorkflowContext[] = [];
  await explorer(plain).exploreStep(model);
  // The step after the fixed one draws what a fresh explorer draws first.
  assert.equal(fixed[1]!.seed, plain[0]!.seed);
  assert.notEqual(plain[0]!.seed, 424242);
});
