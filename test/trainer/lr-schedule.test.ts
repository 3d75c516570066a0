// The learning-rate schedule, and a wall-clock stage's progress driving its decay.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { lrSchedule } from '../../backend/model/optim.js';
import { stageProgress } from '../../backend/trainer/step-loop.js';
import { validateRunConfig } from '../../backend/core/config.js';

describe('lrSchedule', () => {
  test('constant ignores progress', () => {
    assert.equal(lrSchedule(5, { lr: 0.01, decay: 'constant', progress: 0.9 }), 0.01);
  });
  test('cosine follows progress from lr to minRatio * lr', () => {
    const o = { lr: 0.01, decay: 'cosine' as const, minRatio: 0.1 };
    assert.ok(Math.abs(lrSchedule(0, { ...o, progress: 0 }) - 0.01) < 1e-12);
    assert.ok(Math.abs(lrSchedule(0, { ...o, progress: 0.5 }) - 0.0055) < 1e-12);
    assert.ok(Math.abs(lrSchedule(0, { ...o, progress: 1 }) - 0.001) < 1e-12);
    // Past the end of the budget it stays at the floor.
    assert.ok(Math.abs(lrSchedule(0, { ...o, progress: 3 }) - 0.001) < 1e-12);
  });
  test('linear by steps when no progress is given', () => {
    assert.ok(Math.abs(lrSchedule(50, { lr: 1, decay: 'linear', totalSteps: 100, minRatio: 0 }) - 0.5) < 1e-12);
  });
  test('warm-up comes first', () => {
    assert.equal(lrSchedule(0, { lr: 1, warmupSteps: 4, decay: 'cosine', progress: 0 }), 0.25);
  });
});

describe('stageProgress', () => {
  test('the further of steps and wall clock', () => {
    assert.equal(stageProgress({ steps: 100 }, 25, 999), 0.25);
    assert.equal(stageProgress({ wallSeconds: 300 }, 999, 150), 0.5);
    assert.equal(stageProgress({ steps: 100, wallSeconds: 300 }, 10, 150), 0.5);
    assert.equal(stageProgress({ wallSeconds: 10 }, 0, 20), 1);
    assert.equal(stageProgress({}, 5, 5), 0);
  });
});

describe('config', () => {
  test('lr_decay per stage and a bad value named by path', () => {
    const base = {
      taskset: { builtin: 'reverse' },
      workflow: { name: 'single_turn', reward: 'exact_match' },
      stages: [{ name: 'a', algorithm: { name: 'sft' }, steps: 2, lr_decay: 'cosine', min_lr_ratio: 0.2 }],
    };
    const { config } = validateRunConfig(base);
    assert.equal(config!.stages![0]!.lr_decay, 'cosine');
    assert.equal(config!.trainer.lr_decay, 'constant');
    const bad = validateRunConfig({ ...base, trainer: { lr_decay: 'exp' } });
    assert.equal(bad.config, undefined);
    assert.deepEqual(
      bad.issues.map((i) => i.path),
      ['trainer.lr_decay'],
    );
  });
});
