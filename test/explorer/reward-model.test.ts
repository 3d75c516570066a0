import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { saveCheckpoint } from '../../backend/model/checkpoint.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import { Rng } from '../../backend/core/rng.js';
import type { Experience } from '../../backend/core/types.js';
import { preferenceData } from '../../backend/explorer/reward-model/data.js';
import { trainRewardModel } from '../../backend/explorer/reward-model/train.js';
import { scoreSequences } from '../../backend/explorer/reward-model/score.js';
import { resolveReward } from '../../backend/explorer/reward-resolve.js';
import { loadRewardModel } from '../../backend/explorer/reward-model/reward.js';
import { pairScores } from '../../backend/explorer/reward-model/pair-scores.js';
import { fitThreshold, lengthBaseline, pairAccuracy } from '../../backend/explorer/reward-model/pair-metrics.js';
import { evaluate } from '../../backend/coordinator/evaluate.js';
import { singleTurn } from '../../backend/explorer/workflows/single_turn.js';
import type { RewardFn, RolloutModel } from '../../backend/explorer/workflow.js';

await initEngine();
const tok = CharTokenizer.train(['polite answer: please thanks rude go away now abcdefghijklmnopqrstuvwxyz']);
const cfg = makeConfig({
  vocabSize: tok.vocabSize,
  dModel: 24,
  nLayers: 1,
  nHeads: 2,
  nKvHeads: 2,
  dFF: 48,
  maxSeqLen: 48,
  valueHead: true,
});

// People rate answers that say "please" high and answers that say "go away" low; the filler varies.
const rng = new Rng(3);
const filler = () => Array.from({ length: rng.int(0, 4) }, () => 'xyzqk'[rng.int(0, 5)]).join('');
const prompt = (i: number) => `answer ${'abcdefgh'[i % 8]}`;
/** flip: the raters prefer the rude answers instead (the same data, opposite labels). */
function experiences(n: number, flip = false): Experience[] {
  const out: Experience[] = [];
  for (let i = 0; i < n; i++) {
    for (const [text, rating] of [
      [`${filler()} please ${filler()}`, flip ? 1 : 5],
      [`${filler()} go away ${filler()}`, flip ? 5 : 1],
    ] as const) {
      out.push({
        id: `e${out.length}`,
        taskId: `t${i}`,
        groupId: 'g',
        runId: 'r',
        source: 'usual',
        promptTokens: encodePrompt(tok, taskMessages(prompt(i))),
        promptText: prompt(i),
        responseTokens: encodeResponse(tok, text),
        responseText: text,
        actionMask: [],
        logprobs: [],
        modelVersion: 0,
        reward: 0,
        status: 'ok',
        useCount: 0,
        createdAt: 0,
        feedback: { rating },
      });
    }
  }
  return out;
}

/** Share of held-out pairs where the higher-rated answer scores higher. */
async function rankAccuracy(model: Transformer, exps: Experience[]): Promise<number> {
  const s = await scoreSequences(
    model,
    exps.map((e) => [...e.promptTokens, ...e.responseTokens]),
    tok.padId,
  );
  let right = 0;
  for (let i = 0; i < s.length; i += 2)
    if (s[i]! > s[i + 1]! === exps[i]!.feedback!.rating! > exps[i + 1]!.feedback!.rating!) right++;
  return right / (s.length / 2);
}

test('ratings become preference pairs per task; unrated and infra failures are left out', () => {
  const exps = experiences(3);
  exps.push(
    { ...exps[0]!, id: 'u', feedback: undefined },
    { ...exps[0]!, id: 'f', status: 'infra_failure', feedback: { rating: 9 } },
  );
  const d = preferenceData(exps);
  assert.equal(d.ratings.length, 6);
  assert.equal(d.pairs.length, 3);
  for (const p of d.pairs) assert.match(tok.decode(p.chosen, { skipSpecial: true }), /please/);
});

test('Bradley-Terry training learns to rank held-out answers; usable as reward_model:<dir>', async () => {
  const model = new Transformer(cfg, 1);
  const dir = mkdtempSync(join(tmpdir(), 'rft-rm-'));
  try {
    const heldOut = experiences(12);
    const before = await rankAccuracy(model, heldOut);
    const res = await trainRewardModel(model, preferenceData(experiences(24)), {
      steps: 60,
      lr: 3e-3,
      batchSize: 8,
      padId: tok.padId,
      seed: 1,
    });
    const first = res.losses.slice(0, 5).reduce((a, b) => a + b) / 5;
    const last = res.losses.slice(-5).reduce((a, b) => a + b) / 5;
    assert.ok(last < first * 0.6, `loss fell: ${first.toFixed(3)} -> ${last.toFixed(3)}`);
    const after = await rankAccuracy(model, heldOut);
    assert.ok(after >= 0.9, `held-out ranking accuracy ${after} (before ${before})`);
    // The same initial weights trained on the opposite labels learn the opposite ranking, so the
    // ranking above is learned from the data, not an accident of the initialisation.
    const flipped = new Transformer(cfg, 1);
    try {
      await trainRewardModel(flipped, preferenceData(experiences(24, true)), {
        steps: 60,
        lr: 3e-3,
        batchSize: 8,
        padId: tok.padId,
        seed: 1,
      });
      assert.ok((await rankAccuracy(flipped, experiences(12, true))) >= 0.9);
    } finally {
      flipped.dispose();
    }
    await saveCheckpoint(model, dir, { version: 1 }, tok);
    const reward = resolveReward(`reward_model:${dir}`);
    const task = { id: 'x', taskset: 't', domain: 'text' as const, prompt: prompt(3) };
    const good = await reward(task, 'zz please q');
    const bad = await reward(task, 'zz go away q');
    assert.equal(good.status, 'ok');
    assert.ok(good.reward > bad.reward && good.reward > 0 && good.reward < 1, `${good.reward} vs ${bad.reward}`);
    assert.equal(typeof good.details!.score, 'number');

    // Issue 25: a reward model's eval accuracy is the share judged correct (score at or above the
    // threshold fitted on pairs of tasks it did not train on), named as such, never "full reward",
    // which sigmoid(score - threshold) never gives.
    const val = preferenceData(experiences(8)).pairs;
    const vs = await pairScores(model, val, tok.padId);
    const threshold = fitThreshold(vs.chosen, vs.rejected);
    const judged = join(dir, 'judged');
    await saveCheckpoint(model, judged, { version: 1, rewardModel: { threshold } }, tok);
    const rmReward = loadRewardModel(judged);
    const tasks = [...'abcdefgh'].map((c, i) => ({ id: c, taskset: 't', domain: 'text' as const, prompt: prompt(i) }));
    // The policy under evaluation answers politely on the first half of the tasks.
    const answer = (t: number[]) =>
      /answer [abcd]/.test(tok.decode(t, { skipSpecial: true })) ? 'zz please q' : 'zz go away q';
    const policy: RolloutModel = {
      version: 0,
      tokenizer: tok,
      async generate(prompts) {
        return prompts.map((p) => ({
          tokens: tok.encode(answer(p)),
          text: answer(p),
          logprobs: [],
          finishReason: 'stop' as const,
        }));
      },
    };
    const ev = await evaluate(policy, tasks, rmReward, { maxNewTokens: 8 });
    assert.equal(ev.accuracy, 0.5, `judged correct: the four polite answers (${JSON.stringify(ev)})`);
    assert.ok(
      ev.accuracy_means.startsWith(`judged correct (reward model score >= its threshold ${threshold.toPrecision(4)}`),
      ev.accuracy_means,
    );
    assert.ok(ev.mean_reward !== null && ev.mean_reward > 0 && ev.mean_reward < 1, `mean score ${ev.mean_reward}`);
    // Through a workflow (multi_turn, vision, custom ones): the judgement travels in the reward details.
    const viaWorkflow = await evaluate(policy, tasks, rmReward, {
      maxNewTokens: 8,
      workflow: { ...singleTurn, name: 'wrapped_single_turn' },
    });
    assert.deepEqual(
      [viaWorkflow.accuracy, viaWorkflow.accuracy_means, viaWorkflow.mean_reward],
      [ev.accuracy, ev.accuracy_means, ev.mean_reward],
    );
    // The same answers under a reward that gives full marks: accuracy means full reward, as before.
    const exact: RewardFn = async (_t, r) => ({ reward: r.includes('please') ? 1 : 0.2, status: 'ok' });
    const plain = await evaluate(policy, tasks, exact, { maxNewTokens: 8 });
    assert.deepEqual([plain.accuracy, plain.accuracy_means], [0.5, 'full reward']);
  } finally {
    model.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('reward_model: a checkpoint without a value head is refused with the file named', async () => {
  const plain = new Transformer({ ...cfg, valueHead: false }, 1);
  const dir = mkdtempSync(join(tmpdir(), 'rft-rm-'));
  try {
    await saveCheckpoint(plain, dir, { version: 0 }, tok);
    assert.throws(
      () => resolveReward(`reward_model:${dir}`),
      (e: Error) => e.message.includes(join(dir, 'config.json')) && /no value head/.test(e.message),
    );
    assert.throws(() => resolveReward('nope:x'), /unknown reward factory 'nope'/);
  } finally {
    plain.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('pair metrics: ties count half, the length baseline takes its direction from the training pairs, the threshold separates chosen from rejected', () => {
  assert.equal(pairAccuracy([1, 2, 3, 4], [0, 2, 5, 4]), (1 + 0.5 + 0 + 0.5) / 4);
  const p = (c: number, r: number) => ({ chosen: Array(c).fill(1), rejected: Array(r).fill(1) });
  // Shorter answers win on the training pairs: the baseline prefers shorter on the held-out ones too.
  assert.deepEqual(lengthBaseline([p(1, 3), p(2, 4), p(5, 1)], [p(1, 2), p(3, 2), p(2, 2)]), {
    prefers: 'shorter',
    accuracy: (1 + 0 + 0.5) / 3,
  });
  // Cut at 0.5 (midway between 0.1 and 0.9): 7 of 8 answers on their side; at 1.25 only 6.
  assert.equal(fitThreshold([0.9, 1.5, 2.0, 0.95], [-1, -0.5, 0.1, 1.0]), 0.5);
  assert.equal(fitThreshold([2, 3], [0, 1]), 1.5);
});

test('reward_model: a threshold in rft.json that is not a number is refused by file and field', async () => {
  const m = new Transformer(cfg, 1);
  const dir = mkdtempSync(join(tmpdir(), 'rft-rm-'));
  try {
    await saveCheckpoint(m, dir, { version: 0, rewardModel: { threshold: 'high' } }, tok);
    assert.throws(
      () => loadRewardModel(dir),
      (e: Error) =>
        e.message.includes(join(dir, 'rft.json')) &&
        e.message.includes('rewardModel.threshold') &&
        /finite number/.test(e.message),
    );
  } finally {
    m.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
