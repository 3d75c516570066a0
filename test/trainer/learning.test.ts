// Learning tests: from a fixed seed, each algorithm raises the reward (or accuracy) of a tiny model
// on a tiny task by a stated margin. Task: four prompts whose right answer is always the letter "c".
// Every run starts from the same warm-up: SFT on answers drawn at random from the four letters,
// so the policy answers with some letter (reward about 0.25) and has to learn which one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { groupAdvantages, makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import { LocalRolloutModel } from '../../backend/explorer/local-model.js';
import { singleTurn } from '../../backend/explorer/workflows/single_turn.js';
import { workflowSampling, type RewardFn } from '../../backend/explorer/workflow.js';
import { Rng } from '../../backend/core/rng.js';
import type { Experience, Task } from '../../backend/core/types.js';

await initEngine();
const LETTERS = 'abcd';
const tok = CharTokenizer.train(['say ', LETTERS]);
const tasks: Task[] = [...LETTERS].map((c) => ({
  id: c,
  taskset: 't',
  domain: 'text',
  prompt: `say ${c}`,
  answer: 'c',
}));
const reward: RewardFn = async (t, r) => ({ reward: r.trim() === t.answer ? 1 : 0, status: 'ok' });

function expert(t: Task): Experience {
  const p = encodePrompt(tok, taskMessages(t.prompt!));
  const r = encodeResponse(tok, t.answer!);
  return {
    id: `e-${t.id}`,
    taskId: t.id,
    groupId: `e-${t.id}`,
    runId: 'r',
    source: 'expert',
    promptTokens: p,
    promptText: t.prompt!,
    responseTokens: r,
    responseText: t.answer!,
    actionMask: r.map(() => 1),
    logprobs: [],
    modelVersion: -1,
    reward: 1,
    status: 'ok',
    useCount: 0,
    createdAt: 0,
  };
}

async function meanReward(rm: LocalRolloutModel, rng: Rng): Promise<number> {
  const exps = await singleTurn.run(tasks, {
    model: rm,
    reward,
    runId: 'r',
    repeatTimes: 16,
    sampling: workflowSampling({ maxNewTokens: 3, temperature: 1, topK: 0, topP: 1 }, rm.tokenizer),
    step: 0,
    seed: rng.int(0, 1e9),
    split: 'eval',
  });
  return exps.reduce((a, e) => a + e.reward, 0) / exps.length;
}

function demo(t: Task, answer: string, id: string): Experience {
  return {
    ...expert(t),
    id,
    responseTokens: encodeResponse(tok, answer),
    responseText: answer,
    actionMask: encodeResponse(tok, answer).map(() => 1),
  };
}

async function warmUp(model: Transformer): Promise<void> {
  const rng = new Rng(11);
  const sft = new Trainer(model, makeObjective('sft'), { lr: 1e-2, padId: tok.padId });
  for (let s = 0; s < 40; s++) {
    await sft.trainStep(
      Array.from({ length: 16 }, (_, i) => demo(tasks[i % 4]!, LETTERS[rng.int(0, 4)]!, `w${s}-${i}`)),
    );
  }
  sft.dispose();
}

async function learn(
  algorithm: string,
  steps: number,
  opts: { critic?: boolean; experts?: boolean; rl?: boolean; lr?: number } = {},
): Promise<{ before: number; after: number }> {
  const cfg = makeConfig({
    vocabSize: tok.vocabSize,
    dModel: 32,
    nLayers: 1,
    nHeads: 2,
    nKvHeads: 2,
    dFF: 64,
    maxSeqLen: 32,
  });
  const model = new Transformer(cfg, 7);
  const critic = opts.critic ? new Transformer({ ...cfg, valueHead: true }, 8) : undefined;
  const objective = makeObjective(algorithm, {});
  const reference = objective.needsReference ? model.clone() : undefined;
  const trainer = new Trainer(model, objective, { lr: opts.lr ?? 5e-3, padId: tok.padId }, reference, critic);
  await warmUp(model);
  const rm = new LocalRolloutModel(model, tok, 0);
  const rng = new Rng(3);
  const before = await meanReward(rm, rng);
  for (let s = 0; s < steps; s++) {
    let batch: Experience[] = [];
    if (opts.rl !== false) {
      const exps = await singleTurn.run(tasks, {
        model: rm,
        reward,
        runId: 'r',
        repeatTimes: 8,
        sampling: workflowSampling({ maxNewTokens: 3, temperature: 1, topK: 0, topP: 1 }, rm.tokenizer),
        step: s,
        seed: rng.int(0, 1e9),
        split: 'train',
      });
      batch = groupAdvantages(algorithm, exps, {});
    }
    if (opts.experts) batch = [...tasks.map(expert), ...batch];
    await trainer.trainStep(batch, s);
    rm.version = s + 1;
  }
  const after = await meanReward(rm, rng);
  trainer.dispose();
  model.dispose();
  critic?.dispose();
  reference?.dispose();
  return { before, after };
}

test('sft: accuracy rises by at least 0.5 from demonstrations alone', async (t) => {
  const r = await learn('sft', 30, { experts: true, rl: false });
  t.diagnostic(`reward ${r.before.toFixed(3)} -> ${r.after.toFixed(3)}`);
  assert.ok(r.after - r.before >= 0.5, `sft ${r.before} -> ${r.after}`);
});

test('grpo: mean reward rises by at least 0.3', async (t) => {
  const r = await learn('grpo', 30);
  t.diagnostic(`reward ${r.before.toFixed(3)} -> ${r.after.toFixed(3)}`);
  assert.ok(r.after - r.before >= 0.3, `grpo ${r.before} -> ${r.after}`);
});

test('mix: mean reward rises by at least 0.4 (expert rows + usual rows)', async (t) => {
  const r = await learn('mix', 30, { experts: true });
  t.diagnostic(`reward ${r.before.toFixed(3)} -> ${r.after.toFixed(3)}`);
  assert.ok(r.after - r.before >= 0.4, `mix ${r.before} -> ${r.after}`);
});

test('ppo with a critic: mean reward rises by at least 0.3', async (t) => {
  const r = await learn('ppo', 30, { critic: true });
  t.diagnostic(`reward ${r.before.toFixed(3)} -> ${r.after.toFixed(3)}`);
  assert.ok(r.after - r.before >= 0.3, `ppo ${r.before} -> ${r.after}`);
});

test('opmd: mean reward rises by at least 0.3', async (t) => {
  const r = await learn('opmd', 30);
  t.diagnostic(`reward ${r.before.toFixed(3)} -> ${r.after.toFixed(3)}`);
  assert.ok(r.after - r.before >= 0.3, `opmd ${r.before} -> ${r.after}`);
});
