// Unit behaviour beyond the reference fixtures: edge cases (groups of one, all-masked batches, NaN on
// masked positions), registries and bundles, parameter checking, schedules and the composed objective.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine, tf } from '../../backend/model/engine.js';
import {
  AGG_MODES,
  advantageFns,
  aggregate,
  algorithms,
  applyKlPenalty,
  buildObjective,
  chordMu,
  configureAlgorithm,
  entropyLoss,
  klFns,
  klLoss,
  policyLosses,
  splitBatch,
} from '../../backend/trainer/algorithms/index.js';
import type { Experience } from '../../backend/core/types.js';

await initEngine();

const val = (t: tf.Tensor | number) => (typeof t === 'number' ? t : t.dataSync()[0]!);

test('registries hold every unit the issue names', () => {
  assert.deepEqual(advantageFns.names(), ['gae', 'grpo', 'opmd', 'reinforce++', 'rloo']);
  assert.deepEqual(policyLosses.names(), ['chord', 'dpo', 'mix', 'opmd', 'ppo', 'sft']);
  assert.deepEqual(klFns.names(), ['abs', 'corrected_k3', 'k1', 'k2', 'k3', 'low_var_kl']);
  assert.deepEqual(algorithms.names(), ['chord', 'dpo', 'grpo', 'mix', 'opmd', 'ppo', 'reinforce++', 'rloo', 'sft']);
});

test('GRPO: a batch of singletons keeps the raw reward (mean 0, std 1); flat groups give exactly 0', () => {
  const out = advantageFns.get('grpo').compute({
    rewards: [2, -1, 0.5, 0.5],
    groupIds: ['a', 'b', 'c', 'c'],
    actionMask: [
      [1, 1],
      [1, 0],
      [0, 0],
      [1, 1],
    ],
  });
  assert.ok(Math.abs(out.scores![0]! - 2 / (1 + 1e-6)) < 1e-12);
  assert.ok(Math.abs(out.scores![1]! + 1 / (1 + 1e-6)) < 1e-12);
  assert.deepEqual(out.advantages, [
    [out.scores![0], out.scores![0]],
    [out.scores![1], 0],
    [0, 0],
    [0, 0],
  ]);
  assert.equal(out.scores![2], 0);
  assert.equal(out.groupStats!.group_reward_std!.a, 1);
});

test('RLOO and OPMD: group of one', () => {
  const r = advantageFns.get('rloo').compute({ rewards: [3], groupIds: ['x'], actionMask: [[1, 1]] });
  assert.deepEqual(r.advantages, [[3, 3]]);
  const o = advantageFns
    .get('opmd')
    .compute({ rewards: [3], groupIds: ['x'], actionMask: [[1]] }, { opmd_baseline: 'logavgexp' });
  assert.deepEqual(o.scores, [3]);
});

test('advantage functions name missing inputs and mismatched shapes', () => {
  assert.throws(
    () => advantageFns.get('grpo').compute({ rewards: [1], actionMask: [[1]] }),
    /missing input 'groupIds'/,
  );
  assert.throws(
    () => advantageFns.get('gae').compute({ tokenLevelRewards: [[1, 2]], values: [[1]], actionMask: [[1, 1]] }),
    /values\[0\] has 1 tokens/,
  );
  assert.throws(
    () => advantageFns.get('reinforce++').compute({ tokenLevelRewards: [[1]], actionMask: [[1]] }),
    /at least 2 unmasked tokens/,
  );
  assert.throws(
    () =>
      advantageFns.get('grpo').compute({ rewards: [1], groupIds: ['a'], actionMask: [[1]] }, { epsilonn: 1 } as never),
    /unknown parameter 'epsilonn'/,
  );
});

test('all-masked batch: every loss and aggregation gives 0 (not NaN), gradients 0', () => {
  const B = 2;
  const T = 3;
  const nan = tf.fill([B, T], NaN) as tf.Tensor2D;
  const mask = tf.zeros([B, T]) as tf.Tensor2D;
  for (const mode of AGG_MODES) assert.equal(val(aggregate(nan, mask, mode)), 0, mode);
  const base = {
    oldLogprob: nan,
    refLogprob: nan,
    advantages: nan,
    actionMask: mask,
    expertMask: tf.tensor1d([0, 1]),
    step: 0,
  };
  for (const name of policyLosses.names()) {
    for (const mode of AGG_MODES) {
      const params = 'lossAggMode' in policyLosses.get(name).defaults ? { lossAggMode: mode } : {};
      const g = tf.grad(
        (x: tf.Tensor) => policyLosses.get(name).compute({ ...base, logprob: x as tf.Tensor2D }, params).loss,
      )(tf.fill([B, T], NaN));
      const loss = policyLosses.get(name).compute({ ...base, logprob: nan }, params);
      if (name !== 'dpo') assert.equal(val(loss.loss), 0, `${name} ${mode}`);
      else assert.ok(Math.abs(val(loss.loss) - Math.log(2)) < 1e-6, 'dpo with z = 0 is log 2');
      for (const [k, v] of Object.entries(loss.metrics))
        assert.ok(Number.isFinite(val(v)), `${name} ${mode}: metric ${k} = ${val(v)}`);
      assert.ok(
        Array.from(g.dataSync()).every((x) => x === 0),
        `${name} ${mode}: gradient not 0`,
      );
    }
  }
  for (const name of klFns.names())
    assert.equal(val(klLoss(name, { logprob: nan, refLogprob: nan, actionMask: mask }).loss), 0);
  assert.equal(val(entropyLoss({ entropy: nan, actionMask: mask }, { entropyCoef: 1 }).loss), 0);
});

test('NaN / inf on masked positions change nothing', () => {
  const mask = tf.tensor2d([
    [1, 0, 1],
    [0, 0, 1],
  ]);
  const clean = {
    logprob: tf.tensor2d([
      [-1, 0, -2],
      [0, 0, -0.5],
    ]),
    oldLogprob: tf.tensor2d([
      [-1.1, 0, -1.9],
      [0, 0, -0.7],
    ]),
    advantages: tf.tensor2d([
      [1, 0, -1],
      [0, 0, 2],
    ]),
    actionMask: mask,
  };
  const dirty = {
    logprob: tf.tensor2d([
      [-1, NaN, -2],
      [Infinity, NaN, -0.5],
    ]),
    oldLogprob: tf.tensor2d([
      [-1.1, -Infinity, -1.9],
      [NaN, 0, -0.7],
    ]),
    advantages: tf.tensor2d([
      [1, NaN, -1],
      [Infinity, 0, 2],
    ]),
    actionMask: mask,
  };
  for (const mode of AGG_MODES) {
    const a = policyLosses.get('ppo').compute(clean, { lossAggMode: mode });
    const b = policyLosses.get('ppo').compute(dirty, { lossAggMode: mode });
    assert.equal(val(a.loss), val(b.loss), mode);
    for (const k of Object.keys(a.metrics)) assert.equal(val(a.metrics[k]!), val(b.metrics[k]!), `${mode} ${k}`);
  }
});

test('PPO sequence masking: drops negative-advantage tokens of high-KL rows; masked_tokens counts every position', () => {
  // Row KL k = mean(old - new) = 0.5 > 0.1. Token 0 (A < 0) is dropped; the masked token 2 with A < 0
  // counts in the metric's numerator (reference quirk) but never in the loss.
  const out = policyLosses.get('ppo').compute(
    {
      logprob: tf.tensor2d([[-0.5, -0.5, NaN]]),
      oldLogprob: tf.tensor2d([[0, 0, 0]]),
      advantages: tf.tensor2d([[-1, 1, -1]]),
      actionMask: tf.tensor2d([[1, 1, 0]]),
    },
    { enableSequenceMasking: true },
  );
  const near = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) < 1e-6, `${what}: ${a} vs ${b}`);
  near(val(out.metrics['seq_mask/masked_tokens']!), 1, 'masked_tokens');
  near(val(out.metrics['seq_mask/mean_sequence_kl']!), 0.5, 'mean_sequence_kl');
  // Token 1: A = 1, ρ = e^-0.5 < 0.8, so L = max(-ρ, -0.8) = -ρ; token 0 contributes 0.
  near(val(out.loss), -Math.exp(-0.5) / 2, 'loss');
  const off = policyLosses.get('ppo').compute(
    {
      logprob: tf.tensor2d([[-0.5, -0.5, 0]]),
      oldLogprob: tf.tensor2d([[0, 0, 0]]),
      advantages: tf.tensor2d([[-1, 1, -1]]),
      actionMask: tf.tensor2d([[1, 1, 0]]),
    },
    { enableSequenceMasking: true, deltaSequenceMasking: 0.6 },
  );
  near(val(off.metrics['seq_mask/masked_tokens']!), 0, 'below the threshold nothing is dropped');
});

test('seq-mean modes count all-masked rows in B', () => {
  const x = tf.tensor2d([
    [1, 3],
    [5, 5],
  ]);
  const m = tf.tensor2d([
    [1, 1],
    [0, 0],
  ]);
  assert.equal(val(aggregate(x, m, 'token-mean')), 2);
  assert.equal(val(aggregate(x, m, 'seq-mean-token-mean')), 1);
  assert.equal(val(aggregate(x, m, 'seq-mean-token-sum')), 2);
  assert.ok(Math.abs(val(aggregate(x, m, 'seq-mean-token-sum-norm')) - 2) < 1e-6);
  assert.throws(() => aggregate(x, m, 'token-sum' as never), /unknown loss_agg_mode 'token-sum'/);
});

test('policy losses check their inputs and parameters', () => {
  const lp = tf.zeros([2, 3]) as tf.Tensor2D;
  const mask = tf.ones([2, 3]) as tf.Tensor2D;
  assert.throws(
    () => policyLosses.get('ppo').compute({ logprob: lp, actionMask: mask }),
    /policy loss 'ppo': missing input 'oldLogprob'/,
  );
  assert.throws(
    () =>
      policyLosses
        .get('mix')
        .compute({ logprob: lp, oldLogprob: lp, advantages: lp, actionMask: mask, expertMask: tf.tensor1d([0, 1, 0]) }),
    /'expertMask' has shape \[3\], expected \[2\]/,
  );
  assert.throws(
    () =>
      policyLosses
        .get('ppo')
        .compute({ logprob: lp, oldLogprob: lp, advantages: lp, actionMask: mask }, { clip_ratio_c: 1 } as never),
    /clipRatioC must be > 1/,
  );
  assert.throws(
    () =>
      policyLosses
        .get('ppo')
        .compute({ logprob: lp, oldLogprob: lp, advantages: lp, actionMask: mask }, { clipRange: '0.2' } as never),
    /'clipRange' must be a number/,
  );
  assert.throws(
    () =>
      policyLosses.get('dpo').compute({
        logprob: tf.zeros([3, 2]) as tf.Tensor2D,
        refLogprob: tf.zeros([3, 2]) as tf.Tensor2D,
        actionMask: tf.ones([3, 2]) as tf.Tensor2D,
      }),
    /pairs, got 3 rows/,
  );
});

test('metrics never alias the loss tensor (each can be kept and disposed once)', () => {
  const lp = tf.tensor2d([[-1, -2]]);
  const out = policyLosses.get('mix').compute({
    logprob: lp,
    oldLogprob: lp,
    advantages: tf.tensor2d([[1, 1]]),
    actionMask: tf.ones([1, 2]) as tf.Tensor2D,
    expertMask: tf.tensor1d([1]),
  });
  const ids = Object.values(out.metrics)
    .filter((v): v is tf.Scalar => typeof v !== 'number')
    .map((v) => v.id);
  assert.equal(new Set([...ids, out.loss.id]).size, ids.length + 1);
  assert.equal(out.metrics.n_expert, 1);
  assert.equal(out.metrics.n_usual, 0);
  assert.ok(!('usual/pg_loss' in out.metrics), 'no usual metrics without usual rows');
});

test('CHORD mu schedule: linear warmup, cosine decay, valley after', () => {
  const p = { muWarmupSteps: 10, muDecaySteps: 10, muPeak: 0.5, muValley: 0.1 };
  const near = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} vs ${b}`);
  near(chordMu(0, p), 0);
  near(chordMu(5, p), 0.25);
  near(chordMu(10, p), 0.5);
  near(chordMu(15, p), 0.3);
  near(chordMu(20, p), 0.1);
  near(chordMu(1000, p), 0.1);
  near(chordMu(3, { muWarmupSteps: 0, muDecaySteps: 0, muPeak: 0.1, muValley: 0.1 }), 0.1);
});

test('bundles: defaults as DESIGN.md lists', () => {
  const grpo = algorithms.get('grpo');
  assert.deepEqual(grpo.kl, { fn: 'k2', coef: 0.001, as: 'loss' });
  assert.equal(grpo.entropyCoef, 0);
  assert.equal(grpo.lossAggMode, 'token-mean');
  assert.equal((policyLosses.get('ppo').defaults as { clipRange: number }).clipRange, 0.2);
  assert.equal((policyLosses.get('ppo').defaults as { clipRatioC: number }).clipRatioC, 3);
  assert.equal(algorithms.get('mix').sampling.expertRatio, 0.5);
  assert.equal((policyLosses.get('mix').defaults as { mu: number }).mu, 0.1);
  assert.equal(algorithms.get('mix').entropyLossFn, 'mix');
  assert.equal(algorithms.get('ppo').needsCritic, true);
  assert.equal(algorithms.get('ppo').advantage!.fn, 'gae');
  assert.equal(algorithms.get('sft').needsReference, false);
  assert.equal(algorithms.get('dpo').needsReference, true);
  assert.equal(algorithms.get('sft').sampling.expertRatio, 1);
});

test('configureAlgorithm applies overrides and rejects unknown names', () => {
  const b = configureAlgorithm('mix', {
    policyLossParams: { mu: 0.3, clip_range_high: 0.28 },
    expertRatio: 0.25,
    kl: { coef: 0.01 },
  });
  assert.equal(b.policyLoss.params.mu, 0.3);
  assert.equal(b.policyLoss.params.clipRangeHigh, 0.28);
  assert.equal(b.sampling.expertRatio, 0.25);
  assert.deepEqual(b.kl, { fn: 'k2', coef: 0.01, as: 'loss' });
  assert.equal(configureAlgorithm('grpo', { kl: null }).needsReference, false, 'no KL, no reference');
  assert.equal(configureAlgorithm('dpo', { kl: null }).needsReference, true, 'DPO reads the reference anyway');
  assert.throws(
    () => configureAlgorithm('grpo', { policyLossParams: { clip: 0.1 } }),
    /policy loss 'ppo': unknown parameter 'clip'/,
  );
  assert.throws(() => configureAlgorithm('grpo', { kl: { fn: 'k9' } }), /unknown kl function 'k9'/);
  assert.throws(() => configureAlgorithm('mix', { expertRatio: 1.5 }), /expertRatio must be in \[0, 1\]/);
  assert.throws(() => configureAlgorithm('nope'), /unknown algorithm 'nope'/);
});

test('splitBatch: ceil(ratio·B) expert rows', () => {
  assert.deepEqual(splitBatch(10, 0.5), { expert: 5, usual: 5 });
  assert.deepEqual(splitBatch(7, 0.5), { expert: 4, usual: 3 });
  assert.deepEqual(splitBatch(10, 0.3), { expert: 3, usual: 7 });
  assert.deepEqual(splitBatch(8, 0), { expert: 0, usual: 8 });
  assert.deepEqual(splitBatch(8, 1), { expert: 8, usual: 0 });
});

test('KL as a reward penalty', () => {
  const out = applyKlPenalty('k1', [[0, 1]], [[-1, -2]], [[-1.5, -2]], [[1, 1]], 0.1);
  assert.deepEqual(out.kl, [[0.5, 0]]);
  assert.ok(Math.abs(out.tokenLevelRewards[0]![0]! + 0.05) < 1e-12);
  assert.equal(out.meanKl, 0.25);
  for (const name of klFns.names()) {
    const fn = klFns.get(name);
    const t = val(fn.tensor(tf.scalar(-1.2), tf.scalar(-0.9), tf.scalar(-1.0)));
    assert.ok(Math.abs(t - fn.scalar(-1.2, -0.9, -1.0)) < 1e-6, `${name}: tensor and number forms agree`);
  }
});

test('buildObjective: policy loss + kl_coef·KL - entropy_coef·H, metrics distinct', () => {
  const b = configureAlgorithm('grpo', { entropyCoef: 0.01 });
  const obj = buildObjective(b);
  assert.equal(obj.needsReference, true);
  assert.equal(obj.needsEntropy, true);
  assert.equal(obj.computeAdvantages, undefined);
  const inputs = {
    logprob: tf.tensor2d([[-1, -2, -0.5]]),
    oldLogprob: tf.tensor2d([[-1.1, -1.9, -0.6]]),
    refLogprob: tf.tensor2d([[-1.3, -2.2, -0.4]]),
    advantages: tf.tensor2d([[0.5, 0.5, 0.5]]),
    actionMask: tf.tensor2d([[1, 1, 0]]),
    expertMask: tf.tensor1d([0]),
    entropy: tf.tensor2d([[1.5, 0.5, 9]]),
    step: 0,
  };
  const out = obj.loss(inputs);
  const pg = val(policyLosses.get('ppo').compute(inputs).loss);
  const kl = ((-1 + 1.3) ** 2 / 2 + (-2 + 2.2) ** 2 / 2) / 2;
  assert.ok(Math.abs(val(out.loss) - (pg + 0.001 * kl - 0.01 * 1.0)) < 1e-6);
  assert.ok(Math.abs(val(out.metrics.kl_loss!) - kl) < 1e-6);
  assert.ok(Math.abs(val(out.metrics.entropy_loss!) - 1.0) < 1e-6);
  assert.ok(!('loss' in out.metrics), "the trainer owns the 'loss' metric");
  assert.equal(buildObjective(configureAlgorithm('ppo')).computeAdvantages !== undefined, true);
  assert.equal(
    buildObjective(configureAlgorithm('ppo')).applyRewardPenalty,
    undefined,
    'KL as a loss adds no reward penalty',
  );
});

test('KL as a reward penalty lowers the advantage of the row that drifted from the reference', () => {
  const obj = buildObjective(configureAlgorithm('grpo', { kl: { as: 'reward', fn: 'k1', coef: 0.5 } }));
  assert.ok(obj.needsReference && obj.applyRewardPenalty);
  const exp = (id: string, reward: number, logprobs: number[]) =>
    ({
      id,
      groupId: 'g',
      source: 'usual',
      status: 'ok',
      reward,
      logprobs,
      responseTokens: logprobs.map(() => 1),
      actionMask: logprobs.map(() => 1),
    }) as unknown as Experience;
  // Equal rewards: without the penalty every advantage would be 0.
  const exps = [exp('a', 1, [-1, -1]), exp('b', 1, [-1, -1])];
  const { meanKl } = obj.applyRewardPenalty!(exps, [
    [-1, -1],
    [-3, -3],
  ]);
  // k1 = logprob - ref: row a 0, row b 2 per token; scores 1 - 0.5 * 0 and 1 - 0.5 * 4.
  assert.ok(Math.abs(meanKl - 1) < 1e-12);
  assert.ok(exps[0]!.advantages![0]! > 0 && exps[1]!.advantages![0]! < 0);
  assert.ok(Math.abs(exps[0]!.advantages![0]! + exps[1]!.advantages![0]!) < 1e-9);
});

test('GAE in the trainer fills advantages and returns of usual rows', () => {
  const exp = (id: string, source: 'usual' | 'expert', reward: number, n: number) =>
    ({ id, source, reward, responseTokens: Array(n).fill(1), actionMask: Array(n).fill(1) }) as unknown as Experience;
  const exps = [exp('a', 'usual', 1, 2), exp('b', 'expert', 1, 2), exp('c', 'usual', 0, 3)];
  buildObjective(configureAlgorithm('ppo')).computeAdvantages!(exps, [
    [0.5, 0.5],
    [0, 0],
    [0.2, 0.1, 0.3],
  ]);
  assert.deepEqual(exps[0]!.returns, [1, 1]);
  assert.deepEqual(exps[2]!.returns, [0, 0, 0]);
  assert.equal(exps[1]!.advantages, undefined);
  assert.equal(exps[0]!.advantages!.length, 2);
});
