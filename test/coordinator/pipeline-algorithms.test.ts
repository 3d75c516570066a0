// The run's experience pipeline for each kind of algorithm: GRPO-style group advantages are computed
// in the pipeline; PPO (GAE needs the critic, so the trainer computes them), SFT and DPO get none
// there and are not refused for it (every exploring PPO run failed at its first step before).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateRunConfig } from '../../backend/core/config.js';
import type { Experience } from '../../backend/core/types.js';
import { experiencePipeline } from '../../backend/coordinator/setup/explorer.js';

const { config: cfg, issues } = validateRunConfig({
  name: 'p',
  model: { size: 'tiny-0.4m' },
  taskset: { builtin: 'reverse' },
  workflow: { name: 'single_turn', reward: 'exact_match' },
});
if (!cfg) throw new Error(JSON.stringify(issues));

function group(): Experience[] {
  return [1, 0].map((reward, i) => ({
    id: `e${i}`,
    taskId: 't',
    groupId: 'g',
    runId: 'r',
    source: 'usual',
    promptTokens: [1, 2],
    promptText: 'q',
    responseTokens: [5, 6],
    responseText: 'ab',
    actionMask: [1, 1],
    logprobs: [-0.5, -0.5],
    modelVersion: 0,
    reward,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
  }));
}

test('grpo: the pipeline sets per-token group advantages (above / below the group mean)', () => {
  const out = experiencePipeline(cfg, () => ({ name: 'grpo', params: {} })).run(group()).experiences;
  assert.equal(out.length, 2);
  assert.ok(out[0]!.advantages!.every((a) => a > 0) && out[1]!.advantages!.every((a) => a < 0));
});

for (const name of ['ppo', 'sft', 'dpo']) {
  test(`${name}: the pipeline computes no advantages and keeps the experiences`, () => {
    const out = experiencePipeline(cfg, () => ({ name, params: {} })).run(group()).experiences;
    assert.equal(out.length, 2);
    assert.ok(out.every((e) => e.advantages === undefined));
  });
}
