// Gradients of every differentiable unit on the wasm backend (which has no gradient for comparison
// ops): tf.grad w.r.t. logprob (logits for entropy) works, is finite, is exactly 0 on masked
// positions even when the inputs there are NaN/inf, and matches a central finite difference.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initEngine, tf } from '../../backend/model/engine.js';
import {
  entropyFromLogits,
  entropyLoss,
  klFns,
  klLoss,
  phiWeight,
  policyLosses,
  type PolicyLossInputs,
} from '../../backend/trainer/algorithms/index.js';

const engine = await initEngine({ backend: process.env.RFT_BACKEND ?? 'wasm' });

const T = 5;
// Row 0 full, row 1 with a gap (multi-turn), row 2 all masked, row 3 short.
const MASK = [
  [1, 1, 1, 1, 1],
  [1, 1, 0, 0, 1],
  [0, 0, 0, 0, 0],
  [1, 1, 1, 0, 0],
];
// log-ratios chosen away from the clip kinks (ln 0.8, ln 1.2, ln 3 and the ±0.2 / 0.28 variants).
const D = [
  [0.05, -0.4, 0.5, -0.05, 0.1],
  [0.3, -0.1, 0, 0, 1.5],
  [0, 0, 0, 0, 0],
  [-0.6, 0.08, 0.35, 0, 0],
];
const ADV = [
  [1.0, -0.5, 0.7, -1.2, 0.3],
  [-0.8, 0.6, 0, 0, -1.1],
  [0, 0, 0, 0, 0],
  [0.9, -0.3, 1.4, 0, 0],
];
const OLD = [
  [-1.1, -0.7, -2.0, -0.4, -1.6],
  [-0.9, -1.3, -0.2, -0.5, -2.2],
  [-1.0, -1.0, -1.0, -1.0, -1.0],
  [-0.3, -1.8, -1.2, -0.6, -0.9],
];
const LP = OLD.map((row, b) => row.map((o, t) => o + D[b]![t]!));
const REF = LP.map((row, b) => row.map((v, t) => v + 0.3 * Math.sin(3 * b + t + 1)));

/** The same values with NaN / inf written on masked positions: they must change nothing. */
function poison(x: number[][], v: number): number[][] {
  return x.map((row, b) => row.map((y, t) => (MASK[b]![t] ? y : v)));
}

function inputs(logprob: tf.Tensor2D, expert = [0, 1, 0, 1], poisoned = true): PolicyLossInputs {
  const p = (x: number[][], v: number) => tf.tensor2d(poisoned ? poison(x, v) : x);
  return {
    logprob,
    oldLogprob: p(OLD, NaN),
    refLogprob: p(REF, Infinity),
    advantages: p(ADV, NaN),
    actionMask: tf.tensor2d(MASK),
    expertMask: tf.tensor1d(expert),
    step: 3,
  };
}

/** Analytic gradient and a central finite difference of f at x, on the positions listed. */
function check(
  name: string,
  f: (x: tf.Tensor) => tf.Scalar,
  x0: number[][] | number[][][],
  positions: number[][],
  opts: { eps?: number; fd?: boolean } = {},
): number[] {
  const eps = opts.eps ?? 5e-3;
  const shape = [
    x0.length,
    (x0[0] as unknown[]).length,
    ...(Array.isArray((x0[0] as unknown[])[0]) ? [(x0[0] as number[][])[0]!.length] : []),
  ];
  const flat0 = (x0 as unknown[]).flat(2) as number[];
  const grad = tf.tidy(() => tf.grad(f)(tf.tensor(flat0, shape)).dataSync().slice());
  for (let i = 0; i < grad.length; i++)
    assert.ok(Number.isFinite(grad[i]), `${name}: gradient[${i}] = ${grad[i]} on ${engine.backend}`);
  if (opts.fd === false) return Array.from(grad);
  const valueAt = (flat: number[]) => tf.tidy(() => f(tf.tensor(flat, shape)).dataSync()[0]!);
  for (const pos of positions) {
    const i = pos.reduce((acc, p, k) => acc * shape[k]! + p, 0);
    const up = flat0.slice();
    const dn = flat0.slice();
    up[i]! += eps;
    dn[i]! -= eps;
    const fd = (valueAt(up) - valueAt(dn)) / (2 * eps);
    const diff = Math.abs(grad[i]! - fd);
    assert.ok(
      diff <= 5e-4 + 2e-2 * Math.abs(fd),
      `${name}: d/dx[${pos}] analytic ${grad[i]} vs finite difference ${fd}`,
    );
  }
  return Array.from(grad);
}

const UNMASKED = MASK.flatMap((row, b) => row.flatMap((m, t) => (m ? [[b, t]] : [])));
const MASKED = MASK.flatMap((row, b) => row.flatMap((m, t) => (m ? [] : [[b, t]])));

function assertZeroOnMasked(name: string, grad: number[]): void {
  for (const [b, t] of MASKED)
    assert.equal(grad[b! * T + t!], 0, `${name}: gradient on masked [${b},${t}] must be exactly 0`);
}

const CASES: { name: string; loss: string; params?: Record<string, unknown>; expert?: number[] }[] = [
  { name: 'ppo token-mean', loss: 'ppo' },
  {
    name: 'ppo asymmetric clip, c=2, seq-mean-token-sum',
    loss: 'ppo',
    params: { clipRangeHigh: 0.28, clipRatioC: 2, lossAggMode: 'seq-mean-token-sum' },
  },
  { name: 'ppo sequence masking', loss: 'ppo', params: { enableSequenceMasking: true, deltaSequenceMasking: -0.2 } },
  { name: 'ppo seq-mean-token-mean', loss: 'ppo', params: { lossAggMode: 'seq-mean-token-mean' } },
  { name: 'ppo seq-mean-token-sum-norm', loss: 'ppo', params: { lossAggMode: 'seq-mean-token-sum-norm' } },
  { name: 'sft', loss: 'sft' },
  { name: 'mix', loss: 'mix', params: { mu: 0.3, lossAggMode: 'seq-mean-token-mean' } },
  { name: 'mix all expert', loss: 'mix', expert: [1, 1, 1, 1] },
  {
    name: 'chord without phi',
    loss: 'chord',
    params: { enablePhiFunction: false, muWarmupSteps: 2, muDecaySteps: 4, muPeak: 0.5 },
  },
  { name: 'opmd', loss: 'opmd', params: { tau: 0.5 } },
  { name: 'dpo', loss: 'dpo', params: { beta: 0.5, labelSmoothing: 0.1 } },
];

for (const c of CASES) {
  test(`gradient of policy loss: ${c.name}`, () => {
    const fn = policyLosses.get(c.loss);
    const f = (x: tf.Tensor) => fn.compute(inputs(x as tf.Tensor2D, c.expert), c.params).loss;
    const grad = check(c.name, f, poison(LP, NaN), UNMASKED);
    assertZeroOnMasked(c.name, grad);
    assert.ok(
      grad.some((g) => g !== 0),
      `${c.name}: gradient is all zero`,
    );
  });
}

test('every registered policy loss is covered by a gradient case', () => {
  const covered = new Set(CASES.map((c) => c.loss));
  for (const name of policyLosses.names()) assert.ok(covered.has(name), `no gradient case for policy loss '${name}'`);
});

test('fallback to policy gradient: ratio 1 in value, -A/n in gradient', () => {
  const n = MASK.flat().reduce((a, m) => a + m, 0);
  const grad = tf.tidy(() =>
    tf
      .grad(
        (x: tf.Tensor) =>
          policyLosses.get('ppo').compute(inputs(x as tf.Tensor2D), { fallbackToPolicyGradient: true }).loss,
      )(tf.tensor2d(poison(LP, NaN)))
      .dataSync()
      .slice(),
  );
  for (const [b, t] of UNMASKED)
    assert.ok(Math.abs(grad[b! * T + t!]! + ADV[b!]![t!]! / n) < 1e-6, `[${b},${t}]: ${grad[b! * T + t!]}`);
  assertZeroOnMasked('fallback', Array.from(grad));
});

test('CHORD phi is a constant weight: gradient on expert tokens is -mu·phi/n_expert', () => {
  const expert = [0, 1, 0, 1];
  const p = { muWarmupSteps: 0, muDecaySteps: 0, muPeak: 0.4, muValley: 0.4 };
  const grad = tf.tidy(() =>
    tf
      .grad((x: tf.Tensor) => policyLosses.get('chord').compute(inputs(x as tf.Tensor2D, expert), p).loss)(
        tf.tensor2d(poison(LP, NaN)),
      )
      .dataSync()
      .slice(),
  );
  const expertTokens = UNMASKED.filter(([b]) => expert[b!]);
  for (const [b, t] of expertTokens) {
    const prob = Math.exp(LP[b!]![t!]!);
    const want = (-0.4 * prob * (1 - prob)) / expertTokens.length;
    assert.ok(Math.abs(grad[b! * T + t!]! - want) < 1e-6, `[${b},${t}]: ${grad[b! * T + t!]} vs ${want}`);
  }
  assertZeroOnMasked('chord', Array.from(grad));
  const phi = tf.tidy(() =>
    phiWeight(tf.tensor2d([[Math.log(0.5), Math.log(0.9)]]))
      .dataSync()
      .slice(),
  );
  assert.ok(Math.abs(phi[0]! - 0.25) < 1e-6 && Math.abs(phi[1]! - 0.09) < 1e-6);
});

for (const name of klFns.names()) {
  test(`gradient of KL loss: ${name}`, () => {
    const f = (x: tf.Tensor) => {
      const i = inputs(x as tf.Tensor2D);
      return klLoss(
        name,
        { logprob: i.logprob, refLogprob: i.refLogprob!, oldLogprob: i.oldLogprob, actionMask: i.actionMask },
        { klCoef: 0.5 },
      ).loss;
    };
    const grad = check(`kl ${name}`, f, poison(LP, NaN), UNMASKED);
    assertZeroOnMasked(`kl ${name}`, grad);
  });
}

test('gradient of the entropy bonus w.r.t. logits (mix variant, temperature 0.7)', () => {
  const V = 3;
  const logits = MASK.map((row, b) =>
    row.map((m, t) => Array.from({ length: V }, (_, v) => (m ? Math.cos(b + 2 * t + 3 * v) : NaN))),
  );
  const f = (x: tf.Tensor) => {
    const mask = tf.tensor2d(MASK);
    const H = entropyFromLogits(x as tf.Tensor3D, 0.7, mask);
    return entropyLoss(
      { entropy: H, actionMask: mask, expertMask: tf.tensor1d([0, 1, 0, 0]) },
      { entropyCoef: 1, entropyLossFn: 'mix' },
    ).loss;
  };
  const positions = UNMASKED.flatMap(([b, t]) => Array.from({ length: V }, (_, v) => [b!, t!, v]));
  const grad = check('entropy', f, logits, positions);
  for (const [b, t] of MASKED) for (let v = 0; v < V; v++) assert.equal(grad[(b! * T + t!) * V + v], 0);
  // Expert row 1 is excluded by the 'mix' variant.
  for (let t = 0; t < T; t++) for (let v = 0; v < V; v++) assert.equal(grad[(1 * T + t) * V + v], 0);
});
