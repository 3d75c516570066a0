// The trainer on vision experiences: it rebuilds the image prefix from `metadata.image`, so its
// log-probs before any update are the behaviour log-probs of generation, and training reaches the
// patch embedding. Also the critic path (PPO) and the mixed micro-batch error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import { workflowSampling } from '../../backend/explorer/workflow.js';
import { workflows } from '../../backend/explorer/workflows/index.js';
import { rewardFns } from '../../backend/explorer/rewards/index.js';
import { builtinTasksets } from '../../backend/explorer/tasksets/index.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import { expertExperience } from '../../backend/coordinator/setup/tasks.js';
import type { Experience } from '../../backend/core/types.js';
import { assertF32Close, ULPS } from '../helpers/f32-close.js';

await initEngine();

const gen = builtinTasksets.get('vision');
const tasks = gen.generate(4, 5, 'train');
const tok = CharTokenizer.train(tasks.flatMap((t) => [t.prompt!, gen.solve(t)]));
// initStd 0.3: a 0.02-scale model's outputs hardly depend on the image, and the test would prove little.
const cfg = makeConfig({
  vocabSize: tok.vocabSize,
  dModel: 16,
  nLayers: 1,
  nHeads: 2,
  nKvHeads: 1,
  dFF: 32,
  maxSeqLen: 128,
  vision: { patchSize: 4, maxPatches: 16 },
  initStd: 0.3,
});
const T = 0.8;

async function explore(model: Transformer): Promise<Experience[]> {
  return workflows.get('vision').run(tasks, {
    model: new LocalRolloutModel(model, tok, 0),
    reward: rewardFns.get(gen.reward),
    runId: 'r',
    repeatTimes: 2,
    step: 0,
    seed: 11,
    split: 'train',
    sampling: workflowSampling({ maxNewTokens: 6, temperature: T, topK: 0, topP: 1 }, tok),
  });
}

async function weight(model: Transformer, name: string): Promise<Float32Array> {
  return (await model.p(name).data()) as Float32Array;
}

test('vision: trainer log-probs before an update equal the behaviour log-probs; one step changes the patch embedding', async () => {
  const model = new Transformer(cfg, 4);
  const reference = model.clone();
  try {
    const exps = (await explore(model)).filter((e) => e.responseTokens.length > 0);
    assert.ok(exps.length >= 4);
    const trainer = new Trainer(
      model,
      makeObjective('grpo'),
      { lr: 0.01, temperature: T, padId: tok.padId },
      reference,
    );
    const lps = await trainer.responseLogprobs(exps);
    exps.forEach((e, i) => {
      assert.equal(lps[i]!.length, e.logprobs.length);
      assertF32Close(e.logprobs, lps[i]!, ULPS.twoPasses, `experience ${i}: behaviour vs trainer`, tok.vocabSize);
    });
    // Without the images the same sequences score differently (the prefix is really used).
    const blind = await trainer.responseLogprobs(exps.map((e) => ({ ...e, metadata: undefined })));
    assert.ok(blind.some((row, i) => row.some((x, j) => Math.abs(x - lps[i]![j]!) > 1e-3)));

    const before = await weight(model, 'vision.patch_embed.weight');
    const posBefore = await weight(model, 'vision.pos_embed');
    // Fixed, non-zero advantages: a gradient reaches every parameter whatever the rewards were.
    for (const [i, e] of exps.entries()) e.advantages = e.responseTokens.map(() => (i % 2 ? 1 : -1));
    const m = await trainer.trainStep(exps, 0);
    assert.ok(Number.isFinite(m.loss) && m.grad_norm > 0);
    const after = await weight(model, 'vision.patch_embed.weight');
    const posAfter = await weight(model, 'vision.pos_embed');
    assert.ok(
      before.some((x, i) => Math.abs(x - after[i]!) > 1e-6),
      'patch embedding weights changed',
    );
    assert.ok(
      posBefore.some((x, i) => Math.abs(x - posAfter[i]!) > 1e-6),
      'patch position embeddings changed',
    );
    trainer.dispose();
  } finally {
    model.dispose();
    reference.dispose();
  }
});

test('vision: SFT on expert demonstrations (image in metadata) trains the patch embedding', async () => {
  const model = new Transformer(cfg, 6);
  try {
    const experts = tasks.map((t) => expertExperience(tok, 'r', t, gen.solve(t)));
    for (const [i, e] of experts.entries()) assert.deepEqual(e.metadata?.image, tasks[i]!.image);
    const trainer = new Trainer(model, makeObjective('sft'), { lr: 0.01, padId: tok.padId });
    const before = await weight(model, 'vision.patch_embed.weight');
    const m1 = await trainer.trainStep(experts);
    const after = await weight(model, 'vision.patch_embed.weight');
    assert.ok(before.some((x, i) => Math.abs(x - after[i]!) > 1e-6));
    let last = m1.loss;
    for (let s = 0; s < 5; s++) last = (await trainer.trainStep(experts)).loss;
    assert.ok(last < m1.loss, `SFT loss falls: ${m1.loss} -> ${last}`);
    trainer.dispose();
  } finally {
    model.dispose();
  }
});

test('vision: PPO (critic and reference) trains on image experiences', async () => {
  const model = new Transformer(cfg, 8);
  const reference = model.clone();
  const critic = new Transformer({ ...cfg, valueHead: true }, 9);
  try {
    const exps = (await explore(model)).filter((e) => e.responseTokens.length > 0);
    const trainer = new Trainer(
      model,
      makeObjective('ppo'),
      { lr: 0.01, temperature: T, padId: tok.padId },
      reference,
      critic,
    );
    const cBefore = await weight(critic, 'vision.patch_embed.weight');
    const m = await trainer.trainStep(exps, 0);
    assert.ok(Number.isFinite(m.loss));
    const values = await trainer.values(exps);
    exps.forEach((e, i) => assert.equal(values[i]!.length, e.responseTokens.length));
    const cAfter = await weight(critic, 'vision.patch_embed.weight');
    assert.ok(
      cBefore.some((x, i) => Math.abs(x - cAfter[i]!) > 1e-7),
      'the critic learns through its own patch embedding',
    );
    trainer.dispose();
  } finally {
    model.dispose();
    reference.dispose();
    critic.dispose();
  }
});

test('vision: a micro-batch mixing rows with and without images is an error naming the experience', async () => {
  const model = new Transformer(cfg, 10);
  try {
    const experts = tasks.slice(0, 2).map((t) => expertExperience(tok, 'r', t, gen.solve(t)));
    const bad = { ...experts[1]!, id: 'no-image-row', metadata: undefined };
    const trainer = new Trainer(model, makeObjective('sft'), { lr: 0.01, padId: tok.padId });
    await assert.rejects(trainer.trainStep([experts[0]!, bad]), /no-image-row.*no metadata\.image/);
    trainer.dispose();
  } finally {
    model.dispose();
  }
});
