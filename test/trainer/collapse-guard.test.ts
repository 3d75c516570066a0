// The collapse guard (trainer/collapse-guard.ts) on train records: healthy RL (reward up, KL small,
// entropy falling as the policy sharpens) is left alone; a falling reward with a large KL or an
// entropy far from its start, or a KL far too large alone, is said once per stage with the numbers;
// a resumed stage starts from its earlier records (the trainer defaults: lr-auto.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CollapseGuard, GUARD_WINDOW } from '../../backend/trainer/collapse-guard.js';
import { runWarnings } from '../../backend/coordinator/monitor.js';

const opts = { stage: 'main', lr: 2e-4, lrSource: 'trainer.lr', advice: 'lower trainer.lr' };
const rec = (step: number, ref_kl: number, batch_reward: number, sampled_entropy: number) => ({
  kind: 'train',
  stage: 'main',
  step,
  ref_kl,
  batch_reward,
  sampled_entropy,
});

function feed(g: CollapseGuard, rows: [number, number, number][]) {
  return rows.map(([kl, r, h], i) => g.observe(rec(i, kl, r, h))).filter((w) => w !== undefined);
}

test('healthy RL: reward rising, small KL, entropy falling slowly: no warning', () => {
  const g = new CollapseGuard(opts);
  const rows: [number, number, number][] = Array.from({ length: 30 }, (_, i) => [
    0.01 * i,
    0.3 + 0.02 * i,
    0.8 - 0.01 * i,
  ]);
  assert.deepEqual(feed(g, rows), []);
});

test('a reward that falls while the KL explodes: one warning naming the lr and the numbers', () => {
  const g = new CollapseGuard(opts);
  const rows: [number, number, number][] = [
    [0, 0.36, 0.9],
    [0.01, 0.35, 0.9],
    [0.02, 0.37, 0.9],
    [3, 0.2, 0.5],
    [10, 0.1, 0.2],
    [27, 0.1, 0.1],
    [28, 0.05, 0.1],
    [30, 0.0, 0.1],
  ];
  const ws = feed(g, rows);
  assert.equal(ws.length, 1, 'said once');
  const w = ws[0]!;
  assert.equal(w.code, 'policy_collapse');
  assert.equal(w.step, 2 * GUARD_WINDOW - 1);
  assert.match(
    w.message,
    /KL to the reference 13\.33 nats\/token \(start 0\.010\), reward of the trained rollouts 0\.133 \(start 0\.360\)/,
  );
  assert.match(
    w.message,
    /Likely cause: the learning rate 2e-4 \(trainer\.lr\) is too high for this model; lower trainer\.lr$/,
  );
  assert.equal(w.values.lr, 2e-4);
  assert.ok(Math.abs(w.values.start_batch_reward! - 0.36) < 1e-9);
});

test('reward falling alone (harder tasks), or KL moderate with reward steady: no warning; entropy collapse with a falling reward: a warning', () => {
  assert.deepEqual(
    feed(new CollapseGuard(opts), [
      [0, 0.6, 1],
      [0, 0.6, 1],
      [0, 0.6, 1],
      [0.1, 0.2, 1],
      [0.1, 0.2, 1],
      [0.1, 0.2, 1],
    ]),
    [],
  );
  assert.deepEqual(
    feed(new CollapseGuard(opts), [
      [0, 0.6, 1],
      [0, 0.6, 1],
      [0, 0.6, 1],
      [2, 0.6, 1],
      [2, 0.6, 1],
      [2, 0.6, 1],
    ]),
    [],
  );
  assert.equal(
    feed(new CollapseGuard(opts), [
      [0, 0.6, 1],
      [0, 0.6, 1],
      [0, 0.6, 1],
      [0.2, 0.2, 0.1],
      [0.2, 0.2, 0.1],
      [0.2, 0.2, 0.1],
    ]).length,
    1,
  );
  // Entropy collapsed with a large KL: a collapse while the reward does not improve, learning while it does.
  assert.equal(
    feed(new CollapseGuard(opts), [
      [0, 0.35, 0.8],
      [0.4, 0.3, 1],
      [0.6, 0.4, 0.8],
      [1.8, 0.25, 0.07],
      [1.8, 0.45, 0.02],
      [1.9, 0.38, 0.09],
    ]).length,
    1,
  );
  assert.deepEqual(
    feed(new CollapseGuard(opts), [
      [0, 0.35, 0.8],
      [0.4, 0.3, 1],
      [0.6, 0.4, 0.8],
      [1.8, 0.8, 0.07],
      [1.8, 0.9, 0.02],
      [1.9, 0.9, 0.09],
    ]),
    [],
  );
  // A KL far beyond any healthy run is said even while the reward holds.
  assert.equal(
    feed(new CollapseGuard(opts), [
      [0, 0.6, 1],
      [0, 0.6, 1],
      [0, 0.6, 1],
      [20, 0.6, 1],
      [20, 0.6, 1],
      [20, 0.6, 1],
    ]).length,
    1,
  );
});

test('a resumed stage: start values from its earlier records; a warning said before is not said again', () => {
  const before = [
    rec(0, 0, 0.5, 1),
    rec(1, 0, 0.5, 1),
    rec(2, 0, 0.5, 1),
    { kind: 'train', stage: 'other', step: 3, ref_kl: 0, batch_reward: 0, sampled_entropy: 1 },
  ];
  const g = new CollapseGuard(opts, before);
  assert.equal(g.observe(rec(3, 5, 0.1, 1)), undefined);
  assert.equal(g.observe(rec(4, 5, 0.1, 1)), undefined);
  assert.ok(g.observe(rec(5, 5, 0.1, 1)), 'the start came from the records before the resume');
  const w = new CollapseGuard(opts, [
    ...before,
    { kind: 'warning', code: 'policy_collapse', stage: 'main', step: 2, message: 'm', values: {} },
  ]);
  assert.deepEqual(
    [3, 4, 5, 6].map((s) => w.observe(rec(s, 50, 0, 1))),
    [undefined, undefined, undefined, undefined],
  );
  // The summary's list reads the records back, typed; malformed ones are left out.
  assert.deepEqual(
    runWarnings([
      {
        t: 0,
        kind: 'warning',
        code: 'policy_collapse',
        stage: 'main',
        step: 2,
        message: 'm',
        values: { lr: 1, x: 'no' },
      },
      { t: 0, kind: 'warning', step: 3 },
    ]),
    [{ code: 'policy_collapse', step: 2, stage: 'main', message: 'm', values: { lr: 1 } }],
  );
});
