// Kimi k1.5 length reward: values checked against numbers worked out by hand in the comments.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Experience } from '../../backend/core/types.js';
import { ExperiencePipeline } from '../../backend/buffer/pipeline/experience/index.js';
import { lengthLambdas, warmupFactor } from '../../backend/buffer/pipeline/experience/length-reward.js';
import { validateRunConfig } from '../../backend/core/config.js';
import { experiencePipeline } from '../../backend/coordinator/setup/explorer.js';

let n = 0;
/** A rollout of `len` generated tokens (plus `env` environment tokens, mask 0). */
function exp(groupId: string, len: number, reward: number, over: Partial<Experience> = {}, env = 0): Experience {
  const tokens = Array.from({ length: len + env }, (_, i) => 5 + i);
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
    actionMask: tokens.map((_, i) => (i < env ? 0 : 1)),
    logprobs: tokens.map((_, i) => (i < env ? 0 : -0.5)),
    modelVersion: 10,
    reward,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
    ...over,
  };
}

const close = (a: number[], b: number[]) => {
  assert.equal(a.length, b.length);
  a.forEach((x, i) => assert.ok(Math.abs(x - b[i]!) < 1e-12, `[${i}] ${x} != ${b[i]}`));
};

test('lambda by hand: lengths 10, 20, 30, 50 (min 10, range 40)', () => {
  // 0.5 - 0/40 = 0.5; 0.5 - 10/40 = 0.25; 0.5 - 20/40 = 0; 0.5 - 40/40 = -0.5
  close(lengthLambdas([10, 20, 30, 50], [true, true, true, true]), [0.5, 0.25, 0, -0.5]);
  // incorrect: min(0, lambda): a wrong short answer earns nothing, a wrong long one is penalised
  close(lengthLambdas([10, 20, 30, 50], [false, false, false, false]), [0, 0, 0, -0.5]);
  close(lengthLambdas([7, 7, 7], [true, false, true]), [0, 0, 0]);
  assert.equal(warmupFactor(0, 4), 0);
  assert.equal(warmupFactor(1, 4), 0.25);
  assert.equal(warmupFactor(9, 4), 1);
  assert.equal(warmupFactor(0, 0), 1);
});

test('length_reward operator: weight 0.2 on a mixed group; raw reward kept; other groups apart', () => {
  const g = [exp('g', 10, 1), exp('g', 20, 0), exp('g', 30, 1), exp('g', 50, 0)];
  const h = [exp('h', 4, 1), exp('h', 4, 0)]; // equal lengths: untouched
  const r = ExperiencePipeline.fromConfig([{ name: 'length_reward', weight: 0.2, warmup_steps: 0 }]).run([...g, ...h]);
  const out = new Map(r.trainable.map((e) => [e.id, e]));
  // lambdas [0.5, 0.25, 0, -0.5]; correct [T, F, T, F] -> [0.5, 0, 0, -0.5]; x 0.2 -> [0.1, 0, 0, -0.1]
  close(
    g.map((e) => out.get(e.id)!.reward),
    [1.1, 0, 1, -0.1],
  );
  assert.equal(out.get(g[0]!.id)!.rewardDetails!.raw_reward, 1);
  assert.ok(Math.abs((out.get(g[0]!.id)!.rewardDetails!.length_reward as number) - 0.1) < 1e-12);
  assert.equal(out.get(g[1]!.id)!.rewardDetails, undefined, 'nothing added, nothing recorded');
  close(
    h.map((e) => out.get(e.id)!.reward),
    [1, 0],
  );
  assert.equal(r.counts.length_reward, 2);
  assert.equal(g[0]!.reward, 1, 'caller objects untouched');
});

test('warmup: the weight ramps over trainer steps counted by the sampling version', () => {
  const p = ExperiencePipeline.fromConfig([{ name: 'length_reward', weight: 0.2, warmup_steps: 4 }]);
  const at = (v: number) =>
    p.run([exp('g', 10, 1, { modelVersion: v }), exp('g', 50, 1, { modelVersion: v })]).trainable.map((e) => e.reward);
  close(at(0), [1, 1]); // factor 0
  close(at(1), [1.025, 0.975]); // 0.2 x 1/4 x (+-0.5)
  close(at(4), [1.1, 0.9]);
  close(at(40), [1.1, 0.9]);
});

test('default warm-up: without warmup_steps the weight ramps over the first 100 trainer steps', () => {
  const p = ExperiencePipeline.fromConfig([{ name: 'length_reward', weight: 1 }]);
  const at = (v: number) =>
    p.run([exp('g', 10, 1, { modelVersion: v }), exp('g', 50, 1, { modelVersion: v })]).trainable.map((e) => e.reward);
  close(at(0), [1, 1]); // nothing at the start, when few answers are right
  close(at(20), [1.1, 0.9]); // 1 x 20/100 x (+-0.5)
  close(at(50), [1.25, 0.75]);
  close(at(100), [1.5, 0.5]);
  close(at(400), [1.5, 0.5]);
});

test("correctness: the reward function's correct detail wins; else the unshaped reward >= correct_threshold", () => {
  // A format-only reward 0.1 with correct: 0 is wrong; a reward 0.6 without a detail is right at threshold 0.5.
  const g = [exp('g', 10, 0.1, { rewardDetails: { correct: 0 } }), exp('g', 30, 0.6), exp('g', 20, 0.4)];
  const r = ExperiencePipeline.fromConfig([{ name: 'length_reward', correct_threshold: 0.5, warmup_steps: 0 }]).run(
    g,
  ).trainable;
  // lambdas [0.5, -0.5, 0]; correct [F, T, F] -> [0, -0.5, 0]
  close(
    r.map((e) => e.reward),
    [0.1, 0.1, 0.4],
  );
  // after reward_shaping the raw reward decides: shaped 2 x 0.6 + 0 = 1.2, raw 0.6 < threshold 1 -> wrong
  const s = ExperiencePipeline.fromConfig([
    { name: 'reward_shaping', scale: 2 },
    { name: 'length_reward', warmup_steps: 0 },
  ]).run([exp('s', 10, 0.6), exp('s', 20, 1)]).trainable;
  // lambdas [0.5, -0.5]; correct [F, T] -> [0, -0.5]
  close(
    s.map((e) => e.reward),
    [1.2, 1.5],
  );
  assert.equal(s[1]!.rewardDetails!.raw_reward, 1);
});

test('length counts generated tokens only; expert, invalid and single-sample groups are left alone', () => {
  // lengths 10 (+40 env tokens) and 30: 10 is the shorter
  const g = [exp('g', 10, 1, {}, 40), exp('g', 30, 1)];
  const ex = exp('g', 5, 1, { source: 'expert', modelVersion: -1 });
  const bad = exp('g', 1, 1, { status: 'invalid' });
  const one = exp('solo', 9, 1);
  const r = ExperiencePipeline.fromConfig([{ name: 'length_reward', warmup_steps: 0 }]).run([...g, ex, bad, one]);
  const out = new Map(r.experiences.map((e) => [e.id, e.reward]));
  close(
    [g[0]!, g[1]!, ex, bad, one].map((e) => out.get(e.id)!),
    [1.5, 0.5, 1, 1, 1],
  );
});

test('advantages see the length reward (all-correct group is no longer flat); bad params name their path', () => {
  const adv = (exps: Experience[]) => {
    const m = exps.reduce((a, e) => a + e.reward, 0) / exps.length;
    for (const e of exps) e.advantages = e.responseTokens.map(() => e.reward - m);
  };
  const r = ExperiencePipeline.fromConfig([{ name: 'length_reward', warmup_steps: 0 }, { name: 'advantage' }], {
    advantage: adv,
  }).run([exp('g', 2, 1), exp('g', 6, 1)]);
  // rewards 1.5, 0.5 -> mean 1 -> advantages +0.5, -0.5
  assert.deepEqual(
    r.trainable.map((e) => e.advantages![0]),
    [0.5, -0.5],
  );
  assert.throws(
    () => ExperiencePipeline.fromConfig([{ name: 'length_reward', weight: -1, warmup: 3 }]),
    /experience_pipeline\[0\]\.weight: [\s\S]*experience_pipeline\[0\]\.warmup: unknown parameter/,
  );
});

test('a run config with length_reward builds it through the coordinator for any algorithm', () => {
  const { config, issues } = validateRunConfig({
    taskset: { path: 'x.jsonl' },
    workflow: { name: 'math' },
    experience_pipeline: [
      { name: 'validity' },
      { name: 'length_reward', weight: 0.5, warmup_steps: 2 },
      { name: 'advantage' },
    ],
  });
  assert.deepEqual(issues, []);
  for (const algo of ['grpo', 'rloo', 'opmd', 'mix']) {
    const p = experiencePipeline(config!, () => ({ name: algo, params: {} }));
    assert.deepEqual(p.names, ['validity', 'length_reward', 'advantage']);
    const r = p.run([exp('g', 2, 1, { modelVersion: 1 }), exp('g', 6, 1, { modelVersion: 1 })]);
    // factor 1/2 x weight 0.5 x (+-0.5) = +-0.125
    close(
      r.trainable.map((e) => e.reward),
      [1.125, 0.875],
    );
  }
  const bad = validateRunConfig({
    taskset: { path: 'x.jsonl' },
    workflow: { name: 'math' },
    experience_pipeline: [{ name: 'length_reward', warmup_steps: 1.5 }],
  });
  assert.throws(
    () => experiencePipeline(bad.config!, () => ({ name: 'grpo', params: {} })),
    /experience_pipeline\[0\]\.warmup_steps/,
  );
});
