import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { encodeMessage } from '../../backend/model/chat.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import {
  workflowSampling,
  type RolloutGeneration,
  type RolloutModel,
  type WorkflowContext,
} from '../../backend/explorer/workflow.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { environments } from '../../backend/explorer/environments/index.js';
import { builtinTasksets } from '../../backend/explorer/tasksets/index.js';
import type { GenerateOptions } from '../../backend/model/generate.js';
import { ByteTestTokenizer } from '../helpers/byte-tokenizer.js';

await initEngine();
const tok = new ByteTestTokenizer();
const ctxBase = (model: RolloutModel, over: Partial<WorkflowContext> = {}): WorkflowContext => ({
  model,
  reward: async () => ({ reward: 0, status: 'ok' }),
  runId: 'r',
  repeatTimes: 2,
  sampling: workflowSampling({ maxNewTokens: 6, temperature: 1, topK: 0, topP: 1 }, model.tokenizer),
  step: 0,
  seed: 1,
  split: 'train',
  ...over,
});

/** A scripted policy that plays binary search by reading the environment's answers in its prompt. */
class BinarySearchPolicy implements RolloutModel {
  readonly version = 7;
  readonly tokenizer = tok;
  async generate(prompts: number[][], _opts: GenerateOptions): Promise<RolloutGeneration[]> {
    return prompts.map((p) => {
      const text = tok.decode(p, { skipSpecial: false });
      let lo = 1;
      let hi = Number(/from 1 to (\d+)/.exec(text)![1]);
      const turns = [...text.matchAll(/<\|assistant\|>(\d+)<\|end\|><\|environment\|>(\w+)<\|end\|>/g)];
      for (const t of turns) {
        if (t[2] === 'higher') lo = Number(t[1]) + 1;
        else hi = Number(t[1]) - 1;
      }
      const tokens = [...tok.encode(String(Math.floor((lo + hi) / 2))), tok.specialId('end')];
      return {
        tokens,
        text: tok.decode(tokens, { skipSpecial: true }),
        logprobs: tokens.map(() => -0.5),
        finishReason: 'stop' as const,
      };
    });
  }
}

test('multi_turn: environment turns are in the response with mask 0 and logprob 0; reward from the environment', async () => {
  const tasks = builtinTasksets.get('guess').generate(4, 1, 'train');
  const exps = await workflows.get('multi_turn').run(tasks, ctxBase(new BinarySearchPolicy()));
  assert.equal(exps.length, 8);
  for (const e of exps) {
    const task = tasks.find((t) => t.id === e.taskId)!;
    assert.equal(e.status, 'ok');
    assert.equal(e.modelVersion, 7);
    assert.equal(e.rewardDetails!.solved, true, e.responseText);
    assert.equal(e.rewardDetails!.end, 'env_done');
    const turns = Number(e.rewardDetails!.turns);
    assert.ok(Math.abs(e.reward - Math.max(0.1, 1 - 0.1 * (turns - 1))) < 1e-9);
    assert.equal(e.actionMask.length, e.responseTokens.length);
    assert.equal(e.logprobs.length, e.responseTokens.length);
    for (let i = 0; i < e.actionMask.length; i++) assert.equal(e.logprobs[i], e.actionMask[i] ? -0.5 : 0);
    // Exactly the environment's tokens are masked: rebuild them from the observations.
    const envTokens = e.responseTokens.filter((_, i) => e.actionMask[i] === 0);
    const expected = [...e.responseText.matchAll(/\[env\] (\w+)/g)].flatMap((m) => [
      ...encodeMessage(tok, { role: 'environment', content: m[1]! }),
      tok.specialId('assistant'),
    ]);
    assert.deepEqual(envTokens, expected);
    assert.ok(e.responseText.startsWith(String(Math.floor((1 + Number(task.metadata!.hi)) / 2))));
  }
});

test('multi_turn with a real (untrained) transformer: shapes line up, length budget respected, episode ends', async () => {
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: 16,
    nLayers: 1,
    nHeads: 2,
    nKvHeads: 1,
    dFF: 32,
    maxSeqLen: 160,
  });
  const model = new Transformer(cfg, 3);
  try {
    const tasks = builtinTasksets.get('guess').generate(2, 2, 'train');
    const exps = await workflows
      .get('multi_turn')
      .run(tasks, ctxBase(new LocalRolloutModel(model, tok, 3), { maxTurns: 4 }));
    for (const e of exps) {
      assert.equal(e.actionMask.length, e.responseTokens.length);
      assert.equal(e.logprobs.length, e.responseTokens.length);
      assert.ok(e.promptTokens.length + e.responseTokens.length <= cfg.maxSeqLen);
      assert.ok(Number(e.rewardDetails!.turns) >= 1 && Number(e.rewardDetails!.turns) <= 4);
      assert.ok(e.actionMask.some((m) => m === 1));
      for (let i = 0; i < e.actionMask.length; i++) {
        if (e.actionMask[i] === 0) assert.equal(e.logprobs[i], 0);
        else assert.ok(e.logprobs[i]! <= 0 && Number.isFinite(e.logprobs[i]));
      }
      assert.equal(e.modelVersion, 3);
    }
  } finally {
    model.dispose();
  }
});

test('multi_turn: a crashing environment or a failed rollout is infra_failure, not reward 0', async () => {
  if (!environments.has('test_crash'))
    environments.register('test_crash', {
      name: 'test_crash',
      create: () => ({
        step: () => {
          throw new Error('env exploded');
        },
      }),
    });
  const constant: RolloutModel = {
    version: 1,
    tokenizer: tok,
    generate: async (p) =>
      p.map(() => ({
        tokens: [40, tok.specialId('end')],
        text: 'x',
        logprobs: [-1, -1],
        finishReason: 'stop' as const,
      })),
  };
  const task = {
    id: 't1',
    taskset: 'x',
    domain: 'multiturn' as const,
    prompt: 'go',
    metadata: { environment: 'test_crash' },
  };
  const [e] = await workflows.get('multi_turn').run([task], ctxBase(constant, { repeatTimes: 1 }));
  assert.equal(e!.status, 'infra_failure');
  assert.match(e!.statusReason!, /env exploded/);
  const down: RolloutModel = {
    version: 1,
    tokenizer: tok,
    generate: async (p) =>
      p.map(() => ({
        tokens: [],
        text: '',
        logprobs: [],
        finishReason: 'error' as const,
        infraError: 'endpoint down',
      })),
  };
  const [f] = await workflows
    .get('multi_turn')
    .run(builtinTasksets.get('guess').generate(1, 1, 'train'), ctxBase(down, { repeatTimes: 1 }));
  assert.equal(f!.status, 'infra_failure');
  assert.match(f!.statusReason!, /endpoint down/);
});
