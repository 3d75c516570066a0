// `lr: auto` in the trainer, for every algorithm with a policy loss (issue 41 item 1): GRPO, PPO (with
// its critic), MIX, CHORD, RLOO, REINFORCE++, OPMD, SFT and DPO. Each step measures the update KL (one
// no-grad pass over the step's own rows after the update) and the next step trains at the lr the
// controller set from it: from a tiny start the KL is far below the band, so the lr rises.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine } from '../../backend/model/engine.js';
import { makeConfig } from '../../backend/model/config.js';
import { Transformer } from '../../backend/model/transformer.js';
import { CharTokenizer } from '../../backend/model/tokenizer/index.js';
import { encodePrompt, encodeResponse, taskMessages } from '../../backend/model/chat.js';
import { Trainer } from '../../backend/trainer/trainer.js';
import { groupAdvantages, makeObjective } from '../../backend/trainer/resolve-algorithm.js';
import type { Experience } from '../../backend/core/types.js';

await initEngine();
const tok = CharTokenizer.train(['say ', 'abcd']);
const cfg = makeConfig({
  vocabSize: tok.vocabSize,
  dModel: 32,
  nLayers: 1,
  nHeads: 2,
  nKvHeads: 2,
  dFF: 64,
  maxSeqLen: 32,
});

let k = 0;
function row(task: string, answer: string, reward: number, source: 'usual' | 'expert' = 'usual'): Experience {
  const p = encodePrompt(tok, taskMessages(`say ${task}`));
  const r = encodeResponse(tok, answer);
  return {
    id: `x${k++}`,
    taskId: task,
    groupId: source === 'expert' ? `e${k}` : `g-${task}`,
    runId: 'r',
    source,
    promptTokens: p,
    promptText: `say ${task}`,
    responseTokens: r,
    responseText: answer,
    actionMask: r.map(() => 1),
    // Behaviour log-probs near a uniform policy over the char vocabulary.
    logprobs: source === 'expert' ? [] : r.map(() => -Math.log(tok.vocabSize)),
    modelVersion: 0,
    reward,
    status: 'ok',
    useCount: 0,
    createdAt: k,
  };
}

/** A batch for the algorithm: groups of rollouts with mixed rewards; expert rows for MIX / CHORD / SFT; pairs for DPO. */
function batchFor(algorithm: string): Experience[] {
  if (algorithm === 'sft') return ['a', 'b', 'c', 'd'].map((t) => row(t, 'c', 1, 'expert'));
  if (algorithm === 'dpo') return ['a', 'b'].flatMap((t) => [row(t, 'c', 1), row(t, 'd', 0)]);
  const usual = ['a', 'b'].flatMap((t) => ['c', 'd', 'c', 'a'].map((x) => row(t, x, x === 'c' ? 1 : 0)));
  const rows = groupAdvantages(algorithm, usual, {});
  return algorithm === 'mix' || algorithm === 'chord' ? [row('a', 'c', 1, 'expert'), ...rows] : rows;
}

for (const algorithm of ['grpo', 'ppo', 'mix', 'chord', 'rloo', 'reinforce++', 'opmd', 'sft', 'dpo']) {
  test(`lr auto with ${algorithm}: update KL measured each step; the next step trains at the lr it set`, async () => {
    const model = new Transformer(cfg, 5);
    const objective = makeObjective(algorithm, {});
    const reference = objective.needsReference ? model.clone() : undefined;
    const critic = objective.needsCritic ? new Transformer({ ...cfg, valueHead: true }, 6) : undefined;
    const trainer = new Trainer(
      model,
      objective,
      { lr: 1e-6, lrAuto: { targetKl: 3e-3, start: 1e-6, min: 1e-8, max: 1e-2 }, padId: tok.padId },
      reference,
      critic,
    );
    try {
      const ms = [];
      for (let s = 0; s < 3; s++) ms.push(await trainer.trainStep(batchFor(algorithm), s));
      for (const m of ms) {
        assert.ok(Number.isFinite(m.update_kl) && m.update_kl! >= 0, `update_kl ${m.update_kl}`);
        assert.equal(m.update_kl_target, 3e-3);
      }
      assert.equal(ms[0]!.lr, 1e-6, 'the first step at the start');
      assert.equal(ms[1]!.lr, ms[0]!.lr_next, 'the next step at the lr the controller set');
      assert.ok(ms[2]!.lr > ms[0]!.lr, `a tiny update KL raises the lr: ${ms.map((m) => m.lr).join(' ')}`);
      assert.deepEqual(trainer.lrState()?.lr, ms[2]!.lr_next, 'its state is the lr of the next step');
    } finally {
      trainer.dispose();
      model.dispose();
      reference?.dispose();
      critic?.dispose();
    }
  });
}
